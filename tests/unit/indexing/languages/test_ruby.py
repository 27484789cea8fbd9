"""Ruby: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.ruby import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''require "json"
require_relative "../lib/formatter"

# Shared helpers.
module Billing
  CURRENCY = "EUR"

  # An invoice line.
  class Invoice < ActiveRecord::Base
    include Comparable
    extend Billing::Scopes

    def initialize(items)
      super()
      @items = items
    end

    def self.parse(text)
      new(JSON.parse(text))
    end

    # Total of all items.
    def total
      self.validate!
      Formatter.money(sum(@items))
    end

    private

    def sum(items) = items.sum
  end

  def self.build(text)
    Invoice.new(text)
  end
end
'''


def _parse() -> ParsedSource:
    return parse_source("lib/billing/invoice.rb", "ruby", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "lib.billing.invoice", 1, 36),
        ("module", "lib.billing.invoice.Billing", 5, 36),
        ("class", "lib.billing.invoice.Billing.Invoice", 9, 31),
        ("method", "lib.billing.invoice.Billing.Invoice.initialize", 13, 16),
        ("method", "lib.billing.invoice.Billing.Invoice.parse", 18, 20),
        ("method", "lib.billing.invoice.Billing.Invoice.total", 23, 26),
        ("method", "lib.billing.invoice.Billing.Invoice.sum", 30, 30),
        ("function", "lib.billing.invoice.Billing.build", 33, 35),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    invoice = by_name["lib.billing.invoice.Billing.Invoice"]
    assert invoice.signature == "class Invoice < ActiveRecord::Base"
    assert invoice.docstring == "An invoice line."
    assert invoice.parent_id == by_name["lib.billing.invoice.Billing"].id
    assert by_name["lib.billing.invoice.Billing"].docstring == "Shared helpers."
    total = by_name["lib.billing.invoice.Billing.Invoice.total"]
    assert total.signature == "def total"
    assert total.docstring == "Total of all items."
    assert total.parent_id == invoice.id
    parse = by_name["lib.billing.invoice.Billing.Invoice.parse"]
    assert parse.signature == "def self.parse(text)"
    assert parse.parent_id == invoice.id
    assert by_name["lib.billing.invoice.Billing.Invoice.sum"].signature == "def sum(items)"


def test_references() -> None:
    invoice = "lib.billing.invoice.Billing.Invoice"
    assert reference_rows(_parse()) == {
        ("imports", "lib.billing.invoice", "json", 1, "json"),
        ("imports", "lib.billing.invoice", "..lib.formatter", 2, "formatter"),
        ("inherits", invoice, "ActiveRecord.Base", 9, ""),
        ("inherits", invoice, "Comparable", 10, ""),
        ("inherits", invoice, "Billing.Scopes", 11, ""),
        ("calls", f"{invoice}.parse", "JSON.parse", 19, ""),
        ("calls", f"{invoice}.total", "self.validate!", 24, ""),
        ("calls", f"{invoice}.total", "Formatter.money", 25, ""),
        ("calls", f"{invoice}.total", "sum", 25, ""),
        ("calls", f"{invoice}.sum", "items.sum", 30, ""),
        ("calls", "lib.billing.invoice.Billing.build", "Invoice", 34, ""),
    }


def test_file_detection_fields() -> None:
    assert ".rb" in SPEC.extensions
    assert "ruby" in SPEC.shebangs
    assert "Rakefile" in SPEC.filenames
