"""Elixir: entities, spans and references on a small fixture."""

from knowcode.indexing.chunker import chunk_file
from knowcode.indexing.graph_builder import SymbolTable, resolve_reference
from knowcode.indexing.languages.elixir import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''defmodule MyApp.Accounts do
  @moduledoc "Accounts."
  alias MyApp.Repo
  alias MyApp.Accounts.{Role, Team}
  alias MyApp.Helpers, as: H
  import Ecto.Query, only: [from: 2]
  require Logger

  defmodule User do
    defstruct [:name]
  end

  # Create a user from attributes.
  def create(attrs \\\\ %{}) do
    attrs
    |> changeset()
    |> Repo.insert()
  end

  defp changeset(attrs) when is_map(attrs) do
    Logger.info("changeset")
    H.clean(attrs)
  end

  def create(a, b), do: merge(a, b)
end
'''


def _parse() -> ParsedSource:
    return parse_source("lib/my_app/accounts.ex", "elixir", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    # each clause of a multi-clause function is its own entity (`def` forms are separate)
    assert entity_rows(_parse()) == [
        ("module", "lib.my_app.accounts", 1, 26),
        ("module", "lib.my_app.accounts.MyApp.Accounts", 1, 26),
        ("module", "lib.my_app.accounts.MyApp.Accounts.User", 9, 11),
        ("function", "lib.my_app.accounts.MyApp.Accounts.create", 14, 18),
        ("function", "lib.my_app.accounts.MyApp.Accounts.changeset", 20, 23),
        ("function", "lib.my_app.accounts.MyApp.Accounts.create", 25, 25),
    ]


def test_signature_docstring_and_parent() -> None:
    parsed = _parse()
    by_name = by_qualified_name(parsed)
    create = parsed.entities[3]
    assert create.signature == "def create(attrs \\\\ %{})"
    assert create.docstring == "Create a user from attributes."
    assert create.parent_id == by_name["lib.my_app.accounts.MyApp.Accounts"].id
    assert by_name["lib.my_app.accounts.MyApp.Accounts.changeset"].signature == (
        "defp changeset(attrs) when is_map(attrs)")


def test_references() -> None:
    accounts = "lib.my_app.accounts.MyApp.Accounts"
    assert reference_rows(_parse()) == {
        ("imports", "lib.my_app.accounts", "MyApp.Repo", 3, "Repo"),
        ("imports", "lib.my_app.accounts", "MyApp.Accounts.Role", 4, "Role"),
        ("imports", "lib.my_app.accounts", "MyApp.Accounts.Team", 4, "Team"),
        ("imports", "lib.my_app.accounts", "MyApp.Helpers", 5, "H"),
        ("imports", "lib.my_app.accounts", "Ecto.Query", 6, "Query"),
        ("imports", "lib.my_app.accounts", "Logger", 7, "Logger"),
        ("calls", f"{accounts}.create", "changeset", 16, ""),
        ("calls", f"{accounts}.create", "Repo.insert", 17, ""),
        ("calls", f"{accounts}.changeset", "is_map", 20, ""),
        ("calls", f"{accounts}.changeset", "Logger.info", 21, ""),
        ("calls", f"{accounts}.changeset", "H.clean", 22, ""),
        ("calls", f"{accounts}.create", "merge", 25, ""),
    }


def test_a_dotted_module_is_named_by_its_last_part() -> None:
    # `Changeset` as a symbol query, or `Ecto.Changeset.cast` as a call, names the module by its last part
    by_name = by_qualified_name(_parse())
    assert by_name["lib.my_app.accounts.MyApp.Accounts"].name == "Accounts"
    assert by_name["lib.my_app.accounts.MyApp.Accounts.User"].name == "User"


def test_an_alias_and_a_call_through_it_resolve_to_the_dotted_module() -> None:
    source = b"defmodule MyApp.Repo do\n  def insert(x), do: x\nend\n"
    repo = parse_source("lib/my_app/repo.ex", "elixir", source, SPEC)
    accounts = _parse()
    table = SymbolTable()
    table.add_entities([*repo.entities, *accounts.entities])
    table.add_bindings(accounts.references)
    by_name = by_qualified_name(repo)
    module, insert = by_name["lib.my_app.repo.MyApp.Repo"], by_name["lib.my_app.repo.MyApp.Repo.insert"]
    resolved = {(ref.kind.value, ref.target_name): resolve_reference(ref, table)
                for ref in accounts.references}
    assert resolved[("imports", "MyApp.Repo")] == module.id
    assert resolved[("calls", "Repo.insert")] == insert.id



CLAUSES = b'''defmodule Plug.Conn do
  @doc "Puts the status."
  @spec put_status(t, integer) :: t
  def put_status(%{state: :sent}, _status), do: raise("sent")
  def put_status(conn, nil), do: conn
  def put_status(conn, status), do: %{conn | status: code(status)}

  def code(status), do: status
  def put_status(conn), do: conn
end
'''


def test_consecutive_clauses_are_one_function() -> None:
    parsed = parse_source("lib/plug/conn.ex", "elixir", CLAUSES, SPEC)
    spans = [(e.name, e.start_line, e.end_line) for e in parsed.entities if e.kind.value == "function"]
    # the three clauses of put_status are one; a later one after another function is its own
    assert spans == [("put_status", 4, 6), ("code", 8, 8), ("put_status", 9, 9)]
    # the call in the last clause is the function's
    first = parsed.entities[2]
    assert ("calls", "code") in {(row[1], row[2]) for row in parsed.reference_rows if row[0] == first.id}


def test_a_long_function_of_many_clauses_is_chunked_between_its_clauses() -> None:
    clauses = "".join(
        f"  def decode({i}) do\n" + "".join(f"    x{j} = {i} + {j}\n" for j in range(8)) + "    x0\n  end\n"
        for i in range(12))
    text = f"defmodule A do\n{clauses}end\n"
    parsed = parse_source("lib/a.ex", "elixir", text.encode(), SPEC)
    decode = next(e for e in parsed.entities if e.name == "decode")
    chunks = [c for c in chunk_file("lib/a.ex", text, parsed.entities, parsed.split_lines, parsed.lead_lines)
              if c.entity_id == decode.id]
    # each chunk starts at a clause (11 lines each, from line 2), as many whole clauses as fit
    assert [(c.start_line, c.end_line) for c in chunks] == [(2, 45), (46, 89), (90, 133)]
