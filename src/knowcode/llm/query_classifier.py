"""Query classification (spec: Query classification): weighted regex cues pick the task type of a question.

Each task type has a table of cue patterns with weights. A query's score for a type is the sum of the
weights of that type's patterns that match; the best-scoring type wins. Confidence is
``min(1, score / (0.5 x max possible))``, boosted by up to +30% by the gap to the runner-up. A query that
matches nothing is ``explain`` with confidence 0 (a keyword search; see NO_MATCH_TYPE); a question about the
whole repository is ``general`` by its own cues. The cues are generic phrasing (``where is``, ``stack
trace``, ``add support for``), never text copied from a benchmark query, and follow issue 13's rules: a
bare or dotted identifier is ``locate``; a described symptom, an unexpected result, an error message or a
"why does/doesn't" about behaviour is ``debug``; "how would I add/support/extend" is ``extend``; "is it
safe / is there a problem with" is ``review``. They were tuned on the tuning halves in tests/data only
(tests/data/classifier_README.md); ``benchmarks/classifier_accuracy.py`` measures them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from knowcode.models import TaskType

# spec: Query classification — confidence = min(1, score / (0.5 x max possible)). "Max possible" is read as
# the sum of every pattern weight of the winning type (the score a query matching all its cues would get),
# so matching half the winner's total weight is already full confidence.
CONFIDENCE_HALF_SCALE = 0.5
MAX_CONFIDENCE = 1.0  # spec: Query classification — the min(1, …) cap, applied again after the boost
# spec: Query classification — "boosted up to +30% by the gap to the runner-up": confidence is multiplied by
# 1 + MAX_GAP_BOOST x gap, where gap = (winner - runner_up) / winner lies in [0, 1].
MAX_GAP_BOOST = 0.3
# A query that matches no cue has no confidence to claim (spec: Query classification — the score is 0).
NO_MATCH_CONFIDENCE = 0.0
# The spec does not say which type a query with no cue gets. Such queries are keyword searches ("session
# cookie key rotation": 93 of the 284 file-level benchmark queries, 2 of the 888 tuning questions), asking
# about one topic, so explain: its template and persona fit a topic; general's are for questions about the
# whole repository, which now have cues of their own, and would let keyword searches decide whether overview
# questions are answered locally (README, "Query classification", measured both ways).
NO_MATCH_TYPE = TaskType.EXPLAIN
# Only a query's first characters are read: what it asks is in its first lines, and classification is
# linear at ~10 us a character (every cue scans the text), so a pasted 200,000-character log took ~2 s,
# longer than the search it was classified for. The longest labelled question is 308 characters; of
# bench/issues' 100 reports (median 1,305 characters) one is longer (9,424).
CLASSIFIED_CHARS = 8_000

# Pattern weights (spec: Query classification — "weighted regex patterns"). A strong cue on its own
# settles the type (a traceback is a debug question); a medium cue usually does; a weak cue only tips
# a balance between types.
STRONG = 3.0
MEDIUM = 2.0
WEAK = 1.0

# Equal scores go to the earlier type: symptoms of a failure (debug) and requests for a place (locate) are
# the most specific asks. Between a whole-repository question (general) and an explanation, a tie goes to
# general: explain's cues ("how does", "what is", "how are ... chosen") open almost any question, so a
# general cue that scores as much says what the question is about (the repository, not one component).
# Explain is last, the type that wins least by default.
TIE_BREAK_ORDER: tuple[TaskType, ...] = (
    TaskType.DEBUG,
    TaskType.LOCATE,
    TaskType.REVIEW,
    TaskType.EXTEND,
    TaskType.GENERAL,
    TaskType.EXPLAIN,
)

_FLAGS = re.IGNORECASE
_CODE_NOUN = r"(?:file|module|class|function|method|package|folder|directory|script|test|constant)s?"


@dataclass(frozen=True, slots=True)
class WeightedPattern:
    """One cue: a compiled, case-insensitive pattern and the weight it adds to its task type."""

    pattern: re.Pattern[str]
    weight: float


PatternTable = Mapping[TaskType, Sequence[WeightedPattern]]


@dataclass(frozen=True, slots=True)
class QueryClassification:
    """The chosen task type, its confidence in [0, 1] and the raw score of every type."""

    task_type: TaskType
    confidence: float
    scores: dict[TaskType, float] = field(hash=False)


def compile_patterns(
    table: Mapping[TaskType, Sequence[tuple[str, float]]],
) -> dict[TaskType, tuple[WeightedPattern, ...]]:
    """Compile ``(regex, weight)`` rows once, case-insensitively, keyed by task type."""
    return {task: tuple(WeightedPattern(re.compile(regex, _FLAGS), weight) for regex, weight in rows)
            for task, rows in table.items()}


# A code name: a dotted, scoped or called identifier (Context.forward, tokio::runtime, parse_args()), a
# snake_case or camelCase word, or anything in backticks.
_CODE_NAME = (r"(?:`[^`\n]+`|\b[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)+(?:\(\))?"
              r"|\b[a-z$][a-z0-9$]*_\w+|\b_\w+|(?-i:\b[a-z]+[A-Z]\w*)|\b\w+\(\))")
# The start of a clause: the query's start or just after a sentence mark.
_CLAUSE = r"(?:^|[.;:?!]\s+|,\s*(?:but|and|or)\s+)\s*"
# Words that open a question, a request or a wish: a sentence opening with none of them tells what happens.
_OPENERS = (r"how|what|why|where|which|who|whom|when|is|are|was|were|can|could|should|would|will|does|do|did"
            r"|has|have|any|add|adding|implement|make|create|write|build|support|give|let|let's|explain"
            r"|describe|walk|show|find|list|locate|review|check|summari[sz]e|tell|i'd|we'd|i\s+want|we\s+want"
            r"|i\s+need|we\s+need|i'm trying|please|help|extend|introduce|allow|enable|expose|teach|point|go"
            r"|critique|look|break|outline|assess|evaluate")
# A sign that a sentence has a finite verb: a subject pronoun, an auxiliary or negation, a past tense, or a
# determiner-led subject followed by a verb and its complement ("the dev server reloads in a loop").
_FINITE_VERB = (r"(?=[^?]*?\b(?:i|we|it|they|my|our|is|are|was|were|isn't|aren't|wasn't|doesn't|don't|didn't"
                r"|won't|can't|cannot|never|always|still|gets?|got|keeps?|does|did|has|have|had|\w{3,}ed)\b"
                r"|\W*(?:the|a|an|this|that|these|those|every|each|some|its|their)\s+(?:\S+\s+){0,4}?\w+s\s+"
                r"(?:the|a|an|in|on|at|to|into|with|from|after|before|when|whenever|every|each|all|no|nothing"
                r"|forever|immediately|twice|again|back|up|out|off|only|itself|me|us|them|it)\b)")

# What a whole-repository question names as its object: the repository, or the kind of thing it is.
_REPO_NOUN = (r"(?:repo|repository|codebase|code ?base|project|monorepo|library|framework|application|app"
              r"|system|package|service|sdk|engine|toolkit|workspace)")
# The names of the repository itself ("project", "codebase"); not "app" or "service", which also name
# one component of a repository.
_REPO_ITSELF = r"(?:repo|repository|codebase|code ?base|project|monorepo)"
# The repository itself as a question's subject ("the project", "this codebase").
_REPO_SUBJECT = rf"(?:the|this|our|your)\s+(?:whole\s+|entire\s+)?{_REPO_ITSELF}\b"
# "how" opening a question whose subject is not the repository itself
_HOW_NOT_REPO = rf"\bhow\s+(?!(?:(?:is|are|was|were|does|do|did)\s+)?{_REPO_SUBJECT})"
# A past participle, for passive questions ("how are the templates chosen"): a regular -ed form or a common
# irregular one.
_PARTICIPLE = (r"(?:[a-z]{3,}ed|chosen|built|written|run|made|kept|held|set|sent|drawn|done|given|known|shown"
               r"|taken|found|read|bound|split|spawn|torn down)\b")

# Words that make a statement a symptom report: what happens contradicts what the asker did or expected.
_SYMPTOM = (r"still|even (?:though|when|if|after|with)|despite|although|instead of|never|no longer|any ?more"
            r"|fails?|failed|failing|wrong|broken|rejected|ignored|skipped|missing|twice|empty|stale"
            r"|crash\w*|hangs?|lost|disappear\w*|nothing|only (?:the|when|on|for|if)")

_RAW_PATTERNS: dict[TaskType, tuple[tuple[str, float], ...]] = {
    TaskType.DEBUG: (
        (r"\btraceback \(most recent|\b(?:panick?(?:ed|s)?\b\s*(?:at|:)|segfault\w*|segmentation fault"
         r"|core dump\w*)|\berrno\b|\bERR_[A-Z_]+\b", STRONG),
        # a pasted message: "Error: ...", "error[E0502]:", "warning: ...", "TypeError: ..."; not a colon that
        # introduces the asker's own question ("when a subscriber raises an exception: does the event ...")
        (r"\b\w*(?:error|exception|warning|fatal|panic)(?:\[\w+\])?\s*:(?!\s*(?:does|do|is|are|was|were"
         r"|what|how|why|when|which|who|can|could|should|would|will)\b)", STRONG),
        (r"\b(?:OOM\w*|out of memory)\b", STRONG),
        # a message quoted from what the program said ("raises ValueError 'invalid literal for int'", "the
        # log shows \"connection reset by peer\""): an error message seen, not one named
        (r"\b(?:rais(?:es|ed|ing)|throws?|threw|thrown|logs?|logged|logging|prints?|printed|shows?|showed"
         r"|shown|says|said|warns?|warned|complains?|complained|reports?|reported|fails?\s+with|failed\s+with"
         r"|errors?\s+(?:out\s+)?with|dies\s+with|exits?\s+with|(?:starts?|starting|begins?)\s+with)\b"
         r"[^.?!\"'\u201c]{0,60}?(?<!\w)[\"'\u201c]"
         # two words or more, closed within 200 characters (bounded: a report may be 20,000 characters)
         r"(?=[^\"'\u201d\s]{1,40}\s+[^\"'\u201d\s])(?=[^\"'\u201d\n]{4,200}[\"'\u201d])", STRONG),
        # an exception's name alone may be the topic of a review or explain question ("catch BaseException")
        (r"\b(?-i:[A-Z][a-z]\w*(?:Error|Exception|Warning|Timeout))\b", MEDIUM),
        # "why does my X", "why isn't", "why won't": why about the asker's own, or about a negation
        (r"\bwhy\s+(?:(?:does|do|did|is|are|was|were|would)\s+(?:my|our)\b|(?:isn't|aren't|doesn't|don't"
         r"|didn't|won't|can't|wasn't|is\s+not|does\s+not|do\s+not)\b)"
         r"|\bwhy\b[^?]{0,80}?\b(?:fail\w*|crash\w*|break\w*|throw\w*|rais\w+|hang\w*|stuck|wrong|always"
         r"|never|twice|zero|empty|differ\w*|lose|loses|lost|ignored|skipped|missing|still|even)\b"
         r"|\bwhy\s*\?\s*$"
         # a why about what the code is doing right now, in the progressive ("why is the search returning
         # results from other tenants"): an observed behaviour, not a design
         r"|\bwhy\s+(?:is|are)\s+(?:\S+\s+){1,4}?(?!being\b)\w{3,}ing\b", STRONG),
        (r"\b(?:not working|doesn't work|does not work|isn't working|stopped\s+\w+ing|broken"
         r"|what am i missing|what's going on|any idea why|expected|supposed to|shouldn't"
         r"|should\s+(?:\S+\s+){1,8}?but)\b"
         r"|\b(?:debug(?:ging)?|diagnos(?:e|ing)|troubleshoot(?:ing)?)\s+(?:this|it|the|my|our|why|an?)\b"
         r"|\b(?:root cause|diagnosis)\b"
         r"|\bwhat(?:'s|\s+is|\s+went)\s+wrong\b"
         # the code contradicts what its documentation promises ("..., but the docs say the opposite")
         r"|\bbut\s+(?:the\s+)?(?:docs?|documentation|readme|spec|manual|changelog|docstring|comments?)\s+"
         r"(?:says?|said|claims?|states?|promises?)\b|\b(?:the opposite|contrary to)\b", STRONG),
        (r"\b(?:still|even\s+(?:with|though|after|when|if)|although|despite|instead|rather than)\b", MEDIUM),
        # an agent asked to find a cause: "investigate why the job took 6 hours", "track down the leak"
        # ("investigate how the cookie is signed" asks for a mechanism)
        (r"\b(?:investigate(?!\s+(?:how|whether)\b)|figure out why|work out why|track down|hunt down"
         r"|find the (?:root )?cause|what(?:'s|\s+is)\s+causing)\b", STRONG),
        # a described symptom: the code does something it should not, or fails to do what it should
        (r"\b(?:is|are|was|were|gets?|got|being|arrives?|comes? (?:back|out)|ends? up|shows? up|turns? up)"
         r"\s+(?:silently\s+|always\s+|never\s+)?(?:ignored|skipped"
         r"|lost|dropped|missing|empty|wrong|stale|duplicated|truncated|corrupt\w*)\b|\b(?:not|never)\s+(?:hit"
         r"|reached|called|applied|sent|released|invalidated|stored|run)\b|\b(?:never|always)\s+(?:\w+\s+)?"
         r"\w+(?:s|ed)\b"
         r"|\b(?:isn't|aren't|wasn't|doesn't|don't|didn't|won't|can't|cannot)\s+\w+", MEDIUM),
        # what the code does wrong, in any inflection ("drops", "is dropping", "dropped")
        (r"\b(?:los(?:e|es|ing)|drop(?:s|ped|ping)|skip(?:s|ped|ping)|misses|leak(?:s|ed|ing)?"
         r"|corrupt(?:s|ed|ing)?|flicker\w*|disconnect(?:s|ed|ing)?|reject(?:s|ing)?|swallow(?:s|ed|ing)?"
         r"|garbled|mojibake|gibberish|mangled|scrambled"
         r"|rejected|disagree|mismatch\w*|twice|duplicat\w+|off by|one day off|stale"
         r"|loops|looping|in an? (?:\w+\s+)?loop"
         r"|truncat\w+"
         r"|hangs?|hanging|freez\w+|deadlocks?|time[sd]? ?out|timeouts?|forever|exits?(?:\s+with)?"
         r"|exit (?:code|status)|non-?zero|crash\w*|fails?|failed|failing|failure|breaks?(?!\s+down)|broke"
         r"|explod\w+|blows? up)\b"
         # a timing complaint: "the page takes 8 seconds to load"
         r"|\btakes?\s+(?:\d+(?:\.\d+)?\s*(?:ms|s|secs?|seconds|minutes|mins?|hours)|ages|forever)\b"
         # ... or something done too early: "the bar reaches 100% before the upload is done"
         r"|\bbefore\s+(?:the\s+|it\s+|its\s+)?(?:\w+\s+){0,2}?(?:is|was|has|had|were|are)\s+(?:\w+\s+)?"
         r"(?:done|finished|complete\w*|ready|loaded|saved|written|committed|flushed)\b",
         MEDIUM),
        (r"\b(?:returns?|returning|gives?|shows?|prints?|outputs?|says|reports?|comes? back|ends? up)\s+"
         r"(?:(?:as|an?|the|with|me)\s+)?(?:no|nothing|none|null|undefined|nan|empty|wrong|incorrect|zero|0"
         r"|[45]\d\d|the (?:default|same|old|plain))\b"
         r"|\b(?:gives|gave|hands)\s+me\b"
         r"|\b[45]\d\d\s+(?:(?-i:[A-Z][a-z]+)|from|on|when|errors?)\b|\b(?:with|gets?|got)\s+(?:an?\s+)?[45]\d\d\b",
         MEDIUM),
        (r"(?:^|\b(?:i'm|i am|we're|we are|keep|still)\s+)getting\b|\b(?:i|we)\s+(?:get|got|see|saw)\b"
         r"|\b(?:sometimes|randomly|intermittent\w*|sporadic\w*|flaky|under load|in (?:prod|production|ci)"
         r"|apparently|suddenly|all of a sudden|for some reason|out of nowhere|no longer|any ?more"
         r"|(?:has|had|have) no effect|does nothing|nothing happens"
         r"|ends? up (?:with|as|in|being|empty)"
         r"|locally but|works? (?:\w+\s+){1,5}?but|only (?:on|in|when|for|with|under|after|if))\b", MEDIUM),
        (r"\b(?:after|since)\s+(?:the\s+|a\s+|an\s+|i\s+|we\s+|our\s+)?(?:last\s+|latest\s+|recent\s+)?"
         r"(?:upgrad|updat|deploy|migrat|adding|switch|chang|rotat|install|mov|renam|enabl|bump|restart|releas)\w*"
         r"|\bregression\b", MEDIUM),
        (r"\bfix(?:es|ing)?\b|\bbug(?:s|gy)?\b|\b(?:traceback|stack ?traces?)\b", MEDIUM),
        # "I registered a handler but ...": what the asker did, then what went wrong
        (r"\b(?:i|we)\s+(?:\w+\s+)?(?:registered|set|added|configured|passed|defined|created|installed|enabled"
         r"|marked|wrote|called|gave|used|tried|mounted|followed)\b[^.?!]{0,120}?\bbut\b"
         r"|\bworks?\s+(?:fine|ok|well|correctly)\b"
         # a "why" about something of the asker's own ("why is request.user anonymous inside my task")
         r"|\bwhy\b[^?]{0,80}?\b(?:in|inside|from|for|on|with|of|to|by)\s+(?:my|our)\b", MEDIUM),
        # a first sentence of four words or more, with a sign of a finite verb, that is neither a question nor
        # a request usually reports what the code does (shorter ones, or verbless keyword phrases such as
        # "session cookie key rotation", are names or search terms)
        # a symptom stated first, then a question about it ("Uploads are rejected even though the limit is
        # 50 MB. Where is the size checked?"): the question serves the report
        (rf"^(?!\s*(?:{_OPENERS})\b)[^?]*?\b(?:{_SYMPTOM})\b[^?]*?[.;!]\s+[^?]*\?", STRONG),
        (rf"^(?!\s*(?:{_OPENERS})\b){_FINITE_VERB}(?=\W*(?:\S+\s+){{3,}}\S)[^?]*?(?:[.;!](?:\s|$)|$)", WEAK),
        (r"\b(?:errors?|exceptions?|throws?|thrown|raises|raised|unexpected\w*|incorrect|wrong|weird|strange"
         r"|odd|warns?|complains?|refused|denied"
         r"|unreachable|slow\w*|spik\w+|grows?|keeps?|kept)\b", WEAK),
    ),
    TaskType.LOCATE: (
        # the whole query is one code name or path: Context.forward, parse_args, `useSelector`, app/x.rb
        # ... or a pasted declaration head ("impl From<io::Error> for AppError", "def load_config(path)"):
        # a declaration keyword, then a name with code punctuation or a capital, and no question
        (r"^\W*[\w$.:#/<>\[\]()@-]+\W*$"
         r"|^\W*(?:pub\s+)?(?:impl|fn|def|class|struct|enum|trait|interface|func|type)\s+"
         r"(?=[^?]*(?:[<>:()\[\]{}]|(?-i:[A-Z])))[^?.!]{1,80}$", STRONG),
        # "where is" leads the question; a trailing "..., and where is it set?" is a follow-up to another ask
        (r"(?<!\band )\bwhere(?:'s|\s+is|\s+are|\s+do|\s+does|\s+did|\s+can|\s+in)\b", STRONG),
        # "which file ..." as the ask itself; "how does it decide which files changed" embeds it in another
        (rf"(?:^|[.;:?!]\s+|,\s*(?:and\s+)?|\s[\u2014\u2013-]+\s*|\b(?:tell|show)\s+(?:me|us)\s+"
         rf"|\b(?:i|we|you|to|me|us)\s+(?:\w+\s+)?(?:know|see|find)\s+)\W*"
         rf"(?:which|what|in which|in what)\s+(?:(?!(?:is|are|was|were|does|do)\b)\w+\s+)?"
         rf"(?:{_CODE_NOUN}|handlers?|components?|helpers?"
         r"|middlewares?|services?|routes?|endpoints?|scripts?|templates?|places?|spots?|lines?|migrations?"
         r"|beans?|code(?: ?paths?)?|call ?sites?"
         r"|decorators?|parts? of the code(?:base)?)\b",
         STRONG),
        (r"\bfind\s+(?:the|all|every|where|me|each)\b|\blocat(?:e|ing|ion)\b|\bpoint(?:er)?\s+(?:me\s+)?to\b"
         # "jump to" or "go to" a place in the code; not what a value or a request does ("the bar jumps to
         # 100%", "requests go to the wrong host")
         r"|\b(?:show me|take me to|navigate to)\b|\b(?:jump|go)\s+to\s+(?:the\s+|its\s+)?(?:definition"
         r"|declaration|source|file|line|code|implementation)s?\b", STRONG),
        (r"\b(?:usages?|call ?sites?|occurrences|callers)\s+(?:of|to|for|across)\b"
         r"|\breferences\s+(?:to|across)\b"
         r"|\b(?:who|what)\s+(?:calls|uses|imports|references|instantiates|defines|sets|registers|subclasses"
         r"|inherits|extends|implements|overrides|reads|writes|modifies|mutates|raises|throws|catches|emits"
         r"|publishes|consumes)\b"
         r"|\bevery place\b|\blist them\b", STRONG),
        (r"\b(?:definition|declaration|implementation)\s+of\b|\b(?:defined|declared|instantiated|lives?|live"
         r"|located|declared)\b", MEDIUM),
        (r"\bis there (?:already\s+)?an?\s+(?:function|class|method|helper|module|constant|util\w*)\b"
         r"|\bname of the\b", MEDIUM),
        (r"\b(?:grep|look up|search\s+(?:\w+\s+){0,3}?for|path\s+(?:of|to)|line numbers?|file ?paths?"
         r"|file ?names?|in the codebase|in our repo|across the repo)\b", MEDIUM),
        (rf"^\W*{_CODE_NAME}[^?.]{{0,60}}$", MEDIUM),  # a short phrase led by a code name
        (rf"^\W*where\b|(?:^\W*|\bthe\s+)(?:code|spot|place|line|bit|{_CODE_NOUN})\s+(?:that|which|where)\b",
         MEDIUM),
        (r"\bwhere\b|\bsignature\b", WEAK),
    ),
    TaskType.EXPLAIN: (
        # "how does/is X": not when X is the repository itself ("how is the project organised" asks about the
        # whole repository, general's own cues)
        (rf"{_HOW_NOT_REPO}(?:does|do|did|is|are|was|were)\b", STRONG),
        # who makes a decision in the code: "what decides whether the client is redirected"
        (r"\b(?:what|who|which \w+)\s+(?:decides|determines|controls|governs|chooses|picks|triggers)\b"
         r"|\bhow\s+(?:is\s+it|does\s+it)\s+(?:decided|determined|chosen)\b", STRONG),
        # a behaviour in a situation: "what does the event bus do when a subscriber raises?", or the situation
        # first ("When a handler raises inside a route, how does the error page get its status?"): a
        # hypothetical, not a report of what happened
        (r"\bwhat\s+(?:does|do|will|would)\s+(?:\S+\s+){1,4}?(?:do|return|yield|produce|print|output|emit|send)"
         r"\s+(?:when|if|after|on|with|once|for)\b"
         r"|^\W*(?:when|whenever|if|once|while|after|before)\s+[^?,.;]{3,160}?,\s*(?:and\s+)?(?:how|what|which"
         r"|who|whose|where|why|when|does|do|is|are|will|would)\b", STRONG),
        # a "why" that goes on to ask for the mechanism ("why do my logs go to X, and when does Y attach its
        # handler?"): the asker wants it explained, not fixed (the shared questions' README labels it so);
        # likewise a "where" that goes on to ask how or why ("where does the request context come from, and
        # how is it propagated?"): the place is the way into a mechanism
        (r"\bwhy\b[^?]{0,160}?(?:,\s*|\s)and\s+(?:how|when|where|what|who|which)\b"
         r"|\bwhere\b[^?]{0,120}?(?:,\s*|\s)and\s+(?:how|why)\b", STRONG),
        (r"\bexpla(?:in\w*|nation\w*)\b|\bwalk\s+(?:me\s+)?through\b"
         r"|\bwhat\s+happens\s+(?:[\w'-]+\s+){0,4}?(?:when|if|after|before|during|on|between)\b", STRONG),
        # several parts of one flow asked at once ("which hooks run on save, where is the diff computed,
        # and what writes it to disk?"): the asker wants the mechanism, not one place
        (r"\b(?:which|where|what|how|when)\b[^?.]{3,120}?,\s*(?:and\s+)?(?:which|where|what|how|in what order"
         r"|in which order)\b[^?.]{3,120}?(?:,\s*(?:and\s+)?|\s+and\s+)(?:which|where|what|how|in what order"
         r"|in which order)\b", STRONG),
        (r"\bwhat\s+(?:does|do)\b[^?]{0,60}\b(?:do|does|mean|change|control"
         r"|accomplish|buy|save|add|protect|prevent|guard|solve|achieve|represent)\b", MEDIUM),
        # ... or a passive mechanism: "how feature flags are evaluated", "how are the templates chosen"
        (r"\bhow\s+(?:the|a|an|this|that|our|we|it|they)\b|\bhow\s+(?:\w+\s+){0,5}?works?\b"
         rf"|\bhow\s+(?:(?:is|are|was|were)\s+(?:[\w-]+\s+){{1,4}}?|(?:do|does|did)\s+(?:[\w-]+\s+){{1,4}}?get\s+"
         rf"|(?:[\w-]+\s+){{1,4}}?(?:is|are|was|were|gets?|got)\s+){_PARTICIPLE}", MEDIUM),
        # how the code meets a failure, with nothing reported broken: "how does the parser recover after a
        # syntax error", "how are errors propagated to the caller"
        (r"\bhow\s+(?:does|do|is|are|will|would)\b[^?.]{0,60}?\b(?:handle[sd]?|deal(?:s|t)?\s+with|recover\w*"
         r"|react\w*|respond\w*|copes?\s+with|propagat\w+|surfac\w+|contain\w*|report(?:s|ed)?|translat\w+"
         r"|map(?:s|ped)?)\b", MEDIUM),
        (r"\b(?:rundown|break(?:\s+\w+)?\s+down|breakdown|run me through|step[- ]by[- ]step|steps of"
         r"|how come|go(?:ing)? through|run through|in plain words|in (?:what|which) order)\b", MEDIUM),
        # "what is X for?": the purpose of a thing, however it is named (a path, a class, a flag)
        (r"\bused\s+for\b|\bfor what\b|\bwhat\s+for\b|\b(?:describe|description of)\b"
         r"|\bwhat(?:'s|\s+is|\s+are)\b[^?]{1,80}?\bfor\s*\?", MEDIUM),
        # wanting to understand, or curiosity rather than a wish for a change ("I'd like to know why ...")
        (r"\b(?:understand\w*|make sense of|confus\w+|idea behind|the point of)\b"
         r"|\b(?:(?:like|want|wanted|need|trying)\s+to\s+(?:know|learn|find out)|curious|i\s+wonder"
         r"|wondering)\b",
         MEDIUM),
        (r"\b(?:purpose|role|responsibilit\w+|meaning|rationale|reasons?|intent|contract)\b", MEDIUM),
        (r"\b(?:instead of|rather than|versus|difference between|differ from|compared? (?:to|with))\b",
         MEDIUM),
        (r"\bwhy\s+(?:do|did|does|is|are)\s+(?:we|you|they|there|the\s+\w+\s+(?:need|have|use))\b"
         r"|\b(?:do|does|will|would)\s+(?:they|it|\w+)\s+still\b", MEDIUM),  # a rationale, a hypothetical
        (r"\b(?:tell me (?:how|why|what)|clarify|elaborate)\b", MEDIUM),
        (r"\bwhat(?:'s|\s+is|\s+are|\s+does|\s+do)\b", WEAK),  # any question opens this way: a weak cue
        (r"\bwhy\b", WEAK),
        (r"\b(?:lifecycle|life cycle|flow|algorithm|logic|mechanism|internals|under the hood|state machine"
         r"|decide\w*|scoped|strategy)\b", WEAK),
        (r"\b(?:examples?|intuition|conceptually|actually)\b", WEAK),
    ),
    TaskType.EXTEND: (
        # "how would I add X", "how can we support Y"
        (r"\bhow\s+(?:would|could|can|should|do|might|to)\s+(?:i|we|one|you|someone)?\s*(?:\w+\s+){0,2}?"
         r"(?:add|support|extend|implement|make|let|plug|hook|write|create|build|register|teach|expose|serve"
         r"|integrate|introduce|allow|enable|customi[sz]e|override|subclass|swap|replace|give|change|switch"
         r"|migrate|port|convert|turn|restrict|limit|wire|structure|design|approach|go about)\b"
         r"|\bhow\s+(?:would|could|should|might)\s+(?:i|we|one)\s+get\b", STRONG),
        # a request that opens with the change: "add a --json flag", "implement soft deletes", "change the
        # search so that ...", also as the sentence after a statement ("the listing returns every row; give
        # it paging"), or as the purpose the question serves ("To support zstd responses I need to ...")
        (r"(?:^|[.;:!?]\s+)\W*(?:please\s+|let's\s+|(?:can|could|should|shall) (?:we|you|i)\s+"
         r"|(?:in order )?to\s+)?(?:add"
         r"|implement|support|create|build|write|make|extend|give(?!\s+(?:me|us)\b)|introduce|allow|enable"
         r"|expose|teach|wire|integrate|plug|swap|replace|switch|migrate|port|convert|change|modify|adjust"
         r"|tweak|rework|instrument|locali[sz]e"
         r"|let(?!'s|\s+(?:me|us)\s+(?:know|see|understand)))\b"
         r"|\bhelp\s+(?:me|us)\s+(?:to\s+)?(?:add|implement|support|build|write|create|make|extend)\b",
         STRONG),
        (r"\bimplement\b|\bextend\w*\b|\bsupport(?:s|ing)?\s+(?:for|of)\b"
         r"|\bwhat\s+(?:would it take|changes are needed|do i need to change)"
         r"|\b(?:best|cleanest|right|simplest|easiest)\s+(?:way|extension point|hook|place)\b", STRONG),
        (r"\bnew\s+(?:\w+\s+)?(?:endpoint|command|subcommand|feature|flag|option|provider|backend|plugin"
         r"|language|parser|api|route|field|column|method|class|module|tool|type|mode|format|integration"
         r"|reducer|hook|chart|auth\w*|serialization|output|schema|middleware|handler|step|check|job|test)s?\b"
         r"|\b(?:a new|another)\s+(?:kind|sort|type)\s+of\b", STRONG),
        # the asker building a piece of their own ("I'm writing my own middleware that ...")
        (r"\b(?:i'm|i am|we're|we are)\s+(?:writing|building|implementing|adding|creating|making)\s+"
         r"(?:(?:my|our)\s+own|an?\s+(?:custom|new)|an?\s+(?:[\w-]+\s+)?(?:extension|plugin|middleware|adapter"
         r"|backend|handler|hook|transport|provider|serializer|subclass|wrapper|integration))\b", STRONG),
        # where a new piece would go (not "where should I start reading", a newcomer's question)
        (r"\bwhere\s+(?:should|would|could)\b(?!\s+(?:i|we|one|you)\s+(?:start|begin))", STRONG),
        # which extension point to use: "which function should I override", "what class do we subclass"
        (r"\b(?:which|what)\s+(?:\w+\s+){0,2}?(?:should|do|would|must|can)\s+(?:i|we|one|you)\s+(?:override"
         r"|subclass|implement|extend|hook|register|replace|wrap|plug)\b", STRONG),
        # "add" as the asker's intent ("I want to add", "we could add"), not code that adds something
        (r"\b(?:to|please|then|just|(?:can|could|should|shall) (?:we|i)|let's)\s+add\b|^\W*adding\b"
         r"|\b(?:implementing|implementation of)\b", MEDIUM),
        (r"\b(?:plugins?|plug-ins?|hooks?|extension points?|adapters?|configurable|customi[sz]able"
         r"|pluggable|subclass\w*)\b", MEDIUM),  # extension mechanisms
        (r"\b(?:create|build|write|introduce|integrate|wire up|hook up)\b", MEDIUM),
        (r"\b(?:i|we)(?:\s+(?:want|need|would like)|'d like)\b", MEDIUM),
        (r"\b(?:scaffold\w*|generat(?:e|ing)|set up|integrations?|support)\b", MEDIUM),
        (r"\b(?:expos(?:e|ing)|provid(?:e|ing)|overrid(?:e|able)|plug(?:ging)?\s+in|custom|pass in)\b",
         MEDIUM),
        (r"\b(?:let|allow)s?\s+(?:users?|callers?|clients?|people)\b|\b(?:feature|enhancement|capability)\b"
         r"|\bbe able to\b",
         MEDIUM),
        (r"\bhow\s+(?:would|could|can|should)\s+(?:i|we)\b", WEAK),
        (r"\b(?:config(?:uration)? options?|flags?|settings?|parameters?|options?)\b", WEAK),
        (r"\blet'?s\b|\b(?:as well|alongside)\b", WEAK),
    ),
    TaskType.REVIEW: (
        # a review asked for by name, a judgement asked for ("what do you think of X", "thoughts on Y"), or a
        # request that opens by handing code over to inspect ("look at the retry decorator: ...", "check the
        # date handling for ...", "take a look at how passwords are hashed ...")
        (r"\b(?:review\w*|audit\w*|critique|critici[sz]e|sanity[- ]check\w*|double[- ]check\w*|look over"
         r"|second (?:pair of )?eyes)\b|\b(?:code smells?|anti-?patterns?|tech(?:nical)? debt)\b"
         r"|\bwhat do you (?:think|make) (?:of|about)\b|\b(?:thoughts|opinions?|your take) on\b"
         r"|\bhow do you feel about\b|\byour (?:opinion|view|verdict)\b"
         r"|^\W*(?:please\s+|can you\s+|could you\s+)?(?:take a (?:quick\s+)?look at|look at|go over|check"
         r"|inspect|vet|examine|scrutini[sz]e|verify)\b", STRONG),
        # a yes/no question about quality: "is it safe", "is there a problem with", "does X leave Y broken"
        (rf"{_CLAUSE}(?:is|are|was|would|will|does|do|could|can|should|has|have|did)\b[^?]{{0,100}}?\b(?:safe"
         r"|unsafe|correct|right|ok|okay|fine|enough|complete|sound|secure|robust|problems?|issues?|mistakes?"
         r"|bad idea|good idea"
         r"|dangerous|risky|consistent|inconsistent|idempotent|break|leak\w*|los(?:e|es|ing)|proper|acceptable"
         r"|gracefully|wrong|missing|testing anything|premature|the right thing|hide|mask|swallow\w*|always"
         r"|everywhere|every time|in every case)\b",
         STRONG),
        (r"\b(?:security|secure|vulnerab\w+|injection|xss|csrf|exploit\w*|unsafe|saniti[sz]\w+|traversal"
         r"|authori[sz]ation|permission checks?)\b", STRONG),
        (r"\b(?:race conditions?|data races?|concurren\w+|thread[- ]?safe\w*|thread-safety)\b"
         r"|\bcan (?:someone|anyone|an attacker|a user|users|a client)\b", STRONG),
        (r"\b(?:any|potential|possible)\s+(?:\w+\s+)?(?:issues?|problems?|bugs?|risks?|flaws?|pitfalls?|leaks?"
         r"|mistakes?|holes?|gaps?|concerns?)\b|\b(?:what could|could (?:this|it))\s+(?:go wrong|break|fail)"
         r"|\bwhat\s+(?:could|can)\s+go wrong\b|\banything\s+(?:wrong|off|missing|risky|unsafe|problematic)"
         r"|\bwhat are the risks\b", STRONG),
        # "what would break if I renamed X", "what else depends on it": the blast radius of a change
        (r"\bwhat\s+(?:else\s+)?(?:would|could|might|will)\s+(?:\w+\s+){0,2}?(?:break|fail|go wrong"
         r"|be affected|stop working)\b|\bwhat\s+else\s+(?:depends|relies|breaks|uses)\b"
         r"|\b(?:should|do|must)\s+(?:i|we)\s+(?:be\s+)?(?:worr\w+|concern\w+)\b", STRONG),
        # a judged change: "would making Config frozen break ...", "I'm about to change the default"
        (r"\b(?:would|will|does|could|is)\s+(?:\w+\s+){0,2}?(?:making|changing|renaming|removing|dropping"
         r"|deleting|switching|turning|moving|replacing|bumping|upgrading|lowering|raising)\b"
         r"|\b(?:about to|planning to|going to|want to|before (?:i|we))\s+(?:\w+\s+)?(?:change|rename|remove"
         r"|drop|delete|switch|merge|replace|lower|raise)\b", MEDIUM),
        # several actors on one thing: "can two workers pick up the same task?"
        (r"\b(?:two|multiple|several|many|concurrent|parallel)\s+(?:\w+\s+)?(?:workers?|threads?|processes"
         r"|requests?|clients?|users?|nodes?|instances?|goroutines?|tasks?|consumers?|writers?|callers?"
         r"|replicas?)\b|\b(?:simultaneous\w*|at the same time|in parallel)\b", MEDIUM),
        # a yes/no question on whether the code enforces something: "does our JWT check the header?"
        (r"^\W*(?:does|do|is|are|will|would)\b[^?]{0,80}?\b(?:check|checks|checking|validat(?:es?|ing)"
         r"|verif(?:y|ies|ying)|enforc(?:es?|ing)|escap(?:es?|ing)|saniti[sz](?:es?|ing))\b", MEDIUM),
        # the vocabulary of code quality: waste ("dead code", "redundant") and norms ("idiomatic")
        (r"\b(?:dead (?:weight|code)|unused|redundant|unnecessary|overkill|worth it|best practices?"
         r"|style guide|conventions?|idiomatic|pep ?8|lint\w*)\b", MEDIUM),
        # a failure the asker fears rather than has seen: "are there calls that could hang indefinitely?"
        (r"\b(?:could|can|might|would|(?:is|are)\s+(?:\w+\s+){0,3}?going to)\s+(?:\w+\s+){0,2}?(?:hang"
         r"|deadlock|leak|overflow|race|loop forever|go wrong|be exploited|be abused|lose|corrupt|serve stale"
         r"|be stale)\b", MEDIUM),
        (r"\b(?:pull request|pr|diff|changes|patch|commit|before merging)\b"
         r"|\b(?:a|this|that|my|our|the|these)\s+(?:\w+\s+)?change\b|\b(?:the|this|my|our)\s+new\s+\w+"
         # the asker at work on a review, named first ("Reviewing code that retries ...: is ...?")
         r"|^\W*(?:(?:i'm|i am|we're|we are|while|when)\s+)?reviewing\b",
         MEDIUM),
        (r"\b(?:check|look|scan)\s+(?:\w+\s+){0,8}?for\b|\bpoint out\b|\bcheck (?:whether|if|that)\b",
         MEDIUM),
        # correctness and what the tests reach ("only the happy path?"), or a rule the code must keep
        # ("exceptions that should never be retried")
        (r"\b(?:correct(?:ness|ly)?|properly|edge cases?|corner cases?|off[- ]by[- ]one|test coverage"
         r"|covered by tests|gracefully|backwards? compatib\w+|breaking changes?)\b"
         r"|\b(?:happy|unhappy|sad|failure|error)\s+paths?\b|\bexercis(?:e|es|ed|ing)\s+(?:the|every|all)\b"
         r"|\b(?:that|which|who)\s+(?:should|must)\s+(?:never|not|always)\b", MEDIUM),
        (r"\b(?:performance|inefficien\w*|bottlenecks?|maintainab\w+|readab\w+|n\+1|too long|coupling)\b",
         MEDIUM),
        # a concern, or an unease about how the code is ("it feels too permissive", "this looks fragile")
        (r"\b(?:concerns?|worr(?:y|ied)|robust\w*|reliab\w+|risk\w*|danger\w*|strong enough|a problem"
         r"|an issue)\b"
         r"|\btoo\s+(?:permissive|lenient|strict|loose|broad|generous|aggressive|complex|complicated|clever"
         r"|magic\w*|fragile|brittle|tight\w*|coupled|optimistic)\b|\b(?:feels?|seems?|looks?)\s+(?:too|off"
         r"|wrong|fragile|brittle|sketchy|hacky|risky|fishy|suspicious)\b", MEDIUM),
        (r"\b(?:merg(?:e|ing)|approve|lgtm|sign[- ]off|what would you change|feedback|assess\w*|evaluate)\b"
         r"|\b(?:follows?|(?:covers?|handles?)\s+(?:every|all|each))\b", MEDIUM),
        (r"^\W*(?:is|are|does|do|should)\s+(?:it|this|that|there|these|the|our|my)\b", MEDIUM),
        # a hypothetical opened by a modal ("could this migration lock the table", "will this regex blow up
        # on long inputs", "would catching every exception hide errors"): a failure feared, not one reported
        (r"^\W*(?:could|would|will|might)\s+(?!(?:it|this|that)\s+be\s+(?:possible|easy|hard|feasible)\b)"
         r"(?:it|this|that|these|those|the|our|my|any\w*|\w+ing)\b", STRONG),
        (r"\b(?:improve\w*|refactor\w*|clean ?up|simplif\w+|design|suspicious)\b", WEAK),
    ),
    TaskType.GENERAL: (
        (r"\boverview\b|\bsummar(?:y|ies|ise|ize|ising|izing)\b|\b(?:high[- ]level|big picture|bird'?s[- ]eye"
         r"|tl;?dr|orientation|lay of the land)\b"
         # the outline named as such ("the general structure of this compiler"), or the purpose of the whole
         # ("what is the point of this repo", "... of all this code")
         r"|\b(?:general|overall|basic|rough)\s+(?:structure|layout|shape|architecture|design|organi[sz]ation"
         r"|idea|picture)\b"
         rf"|\b(?:point|purpose|goal|aim|mission)\s+of\s+(?:(?:the|this)\s+(?:whole\s+|entire\s+)?{_REPO_NOUN}\b"
         r"|all\s+(?:of\s+)?th(?:is|ese|e)\b)", STRONG),
        (r"\b(?:tour|onboard\w*|new (?:here|to (?:this|the)|contributors?|users?|maintainers?)|newcomers?"
         r"|never used|first (?:time|contribution)|get(?:ting)? started"
         r"|where (?:should|do|can) (?:i|we) (?:start|begin)|joining the team|new to the team"
         r"|(?:read|understand|learn|study|know|look at)\s+first|find (?:my|our|your) way around"
         # which parts to read or learn ("which files would you have me read")
         r"|(?:which|what)\s+(?:\w+\s+)?(?:parts|modules|files|pieces|areas)\b[^?]{0,40}?\b(?:read|learn|study)"
         r"|get (?:my|our) bearings|orient (?:myself|ourselves)|navigat\w+ (?:this|the) (?:code ?base|repo\w*"
         r"|project))\b", STRONG),
        (r"\bwhat\s+(?:(?:is|does)\s+)?(?:this|the)\s+(?:\w+\s+)?(?:repo|repository|codebase|project|library|tool|app"
         r"|application|package|service|system)\w*(?:\s+(?:even\s+)?(?:does|do|is|solve\w*|provide\w*))?\b"
         r"|^\W*what\s+is\s+this\W*$|\bwhat\s+am\s+i\s+looking\s+at\b"
         rf"|\bwhat\s+(?:kind|sort|type)\s+of\s+(?:thing|tool|{_REPO_NOUN})\s+is\s+(?:this|it)\b", STRONG),
        # what a newcomer reads first: "which parts should I read first", "where should I start reading"
        (r"\b(?:start|begin)\s+reading\b|\bread(?:ing)?\s+first\b|\breading order\b|\b(?:which|what)\s+"
         r"(?:parts|modules|files|pieces|areas)\s+(?:should|do|must|would)\s+(?:i|we|you)\b"
         r"|\bwhat\s+(?:should|must|do)\s+(?:i|we)\s+read\b|\bwhat\s+(?:does|is)\s+(?:it|this)\s+"
         r"(?:do|for)\b", MEDIUM),
        # the parts and how they fit, down to architecture-level nouns ("the business logic" against "the
        # framework glue")
        (r"\b(?:moving parts|subsystems?|fit together|put together|out of the box|building blocks|mental map"
         r"|main abstractions|core concepts|business logic|domain (?:logic|layer|model)|glue(?: code)?"
         r"|plumbing|boilerplate|infrastructure code"
         r"|layers of|ecosystem|split (?:between|across))\b", MEDIUM),
        (r"\b(?:tech(?:nology)? stack|languages?|frameworks?|libraries|dependencies|third[- ]party"
         r"|requirements|platforms|runtimes)\b", MEDIUM),
        (r"\bthis\s+(?:[\w-]+\s+){0,2}?(?:repo|repository|codebase|code ?base|project|application|app"
         r"|monorepo|system|package|library|service|toolkit|sdk|engine|tool|cli|pipeline|platform)\b"
         r"|\bthe\s+(?:repo|repository|codebase|code ?base|project|monorepo|library|source tree)\b",
         MEDIUM),
        (r"\b(?:organi[sz]ed|organi[sz]ation|layout|laid out|structure|architecture|monolith\w*)\b"
         r"|\b(?:is|are)\s+(?:\w+\s+){0,3}?structured\b", STRONG),
        # an explanation whose object is the whole repository: "walk me through the codebase", "how does this
        # library work", "the design of this system", "describe each package under src/"
        (r"\b(?:walk\s+(?:me\s+|us\s+)?through|explain|describe|summari[sz]e|introduce|tour of|go through)\s+"
         r"(?:me\s+|us\s+)?(?:the|this|your|our)\s+(?:whole\s+|entire\s+)?(?:repo|repository|codebase"
         r"|code ?base|project|monorepo|architecture)\b"
         rf"|\bhow\s+(?:does|do|is|are)\s+(?:this|the|our|your)\s+(?:whole\s+|entire\s+)?(?:thing|{_REPO_NOUN})"
         r"\s+(?:\w+\s+){0,2}?(?:work|fit|hang|come|tick)"
         rf"|\b(?:design|architecture|structure|layout|organi[sz]ation|shape)\s+of\s+(?:the|this|our|your)\s+"
         rf"(?:whole\s+|entire\s+)?{_REPO_NOUN}\b"
         r"|\b(?:explain|describe|summari[sz]e|go through|walk (?:me\s+)?through)\s+(?:\w+\s+){0,4}?(?:each"
         r"|every|all (?:of )?the)\s+(?:top-level\s+)?(?:packages?|modules?|folders?|director(?:y|ies)"
         r"|crates?|layers?|services?|components?|apps?)\b", STRONG),
        # how the parts relate: "how do the frontend and backend talk to each other"
        (r"\b(?:talk|relate|interact|communicate|connect|depend)\w*\s+(?:to|with|on)\s+"
         r"(?:each other|one another)\b", MEDIUM),
        (r"\b(?:directory|directories|folders?)\b", WEAK),
        # the repository as a whole: what kind of thing it is ("is this a library, a CLI, a server?"), or the
        # repository as the one acting ("which services does this repo deploy", "does the project use X")
        (rf"\b(?:is|are)\s+(?:this|it|these)\s+(?:\w+\s+)?(?:an?\s+)?(?:[\w-]+\s+){{0,2}}?(?:{_REPO_NOUN}|cli"
         r"|server|daemon|plugin|tool|script|wrapper|fork|demo|prototype|template|boilerplate)s?\s*"
         r"(?:,|\bor\b|\?|$)"
         rf"|\b(?:does|do|did|can|will)\s+(?:this|the|our|your)\s+{_REPO_ITSELF}\s+\w+"
         # "this app" as the one that depends on or runs things ("what services does this app depend on")
         rf"|\b(?:does|do|did|will)\s+this\s+(?:whole\s+)?(?:thing|{_REPO_NOUN})\s+(?:\w+\s+)?(?:depend|rely"
         r"|relies|use|need|require|ship|run|talk|call|integrate)\w*", STRONG),
        (r"\blist\s+(?:all|the|of|every)\b|\b(?:how many|how big|how large|size of|how mature)\b", MEDIUM),
        (r"\b(?:main|key|core|major|top[- ]level|few|big|biggest|important|principal|primary)\s+"
         r"(?:modules|components|parts|pieces|packages|features|folders|crates|layers|services|apps|binaries"
         r"|concepts|dependencies|areas|directory|directories|logic|objects|classes|types|ideas)\b", MEDIUM),
        # a question whose scope is the whole repository, which outweighs an incidental explain or locate
        # cue ("how is ..."): every part at once ("what does each of the top-level folders do", "which parts
        # of this codebase are stable", "how is the code split between src and tests"), or the repository
        # as the extent ("how is configuration handled across the project", "as a whole")
        (r"\beach\s+(?:of\s+(?:the|its|our|these)\s+)?(?:[\w-]+\s+)?(?:folders?|director(?:y|ies)|packages?"
         r"|crates?|layers?|subsystems?|subprojects?|workspaces?|apps?|services|top[- ]level)\b"
         r"|\b(?:parts?|pieces|components|layers|building blocks)\s+of\s+(?:the|this|our|your)\s+"
         rf"(?:whole\s+)?{_REPO_NOUN}\b|\b(?:this|the)\s+(?:whole|entire)\s+(?:thing|{_REPO_NOUN})\b"
         r"|\beverything\s+(?:in\s+)?here\b"
         r"|\bhow\s+(?:is|are)\s+(?:it|this|(?:the|our|this)\s+(?:code|code ?base|source|repo\w*|project"
         r"|files|monorepo|packages|modules|app\w*|system|library|framework))\s+(?:\w+\s+)?(?:split|divided"
         r"|arranged|grouped|put together|broken (?:up|down)|wired together|architected)\b"
         r"|\b(?:across|throughout)\s+(?:the|this|our|your)\s+(?:whole\s+|entire\s+)?(?:project|code ?base"
         r"|repo\w*|monorepo|packages|modules|services|app\w*|system)\b|\bas a whole\b", STRONG),
        (r"\b(?:contribut\w+|map (?:of|out)|landscape|release process|versioning|deployed|conventions)\b",
         MEDIUM),
        (r"\b(?:briefly|in a nutshell|in short|elevator pitch|tell me about|entry ?points?|readme|statistics"
         r"|stats|public (?:api|surface|interface)|api surface|surface area)\b", MEDIUM),
        # the outline, not the detail ("just a rough layout", "at a glance")
        (r"\b(?:in general|overall|generally|broadly|at a high level|whole system|at the top level"
         r"|rough(?:ly)?|at a glance|broad strokes)\b", MEDIUM),
        (r"\b(?:source files|modules|packages|components|services)\b", WEAK),
    ),
}


DEFAULT_PATTERNS: dict[TaskType, tuple[WeightedPattern, ...]] = compile_patterns(_RAW_PATTERNS)


def classify(query: str, patterns: PatternTable = DEFAULT_PATTERNS) -> QueryClassification:
    """Classify a query into a task type with a confidence, as spec "Query classification" describes.

    :param query: the user's or agent's question.
    :param patterns: the cue table; defaults to :data:`DEFAULT_PATTERNS` (tests pass small tables).
    :return: the winning type, its boosted confidence and every type's raw score.
    """
    text = query[:CLASSIFIED_CHARS].replace("\u2019", "'")  # typographic apostrophes read as plain ones
    scores = {task: sum(p.weight for p in patterns.get(task, ()) if p.pattern.search(text))
              for task in TIE_BREAK_ORDER}
    ranked = sorted(TIE_BREAK_ORDER, key=lambda task: (-scores[task], TIE_BREAK_ORDER.index(task)))
    winner, runner_up = ranked[0], ranked[1]
    best = scores[winner]
    if best <= 0:
        return QueryClassification(NO_MATCH_TYPE, NO_MATCH_CONFIDENCE, scores)
    max_possible = sum(p.weight for p in patterns[winner])
    confidence = min(MAX_CONFIDENCE, best / (CONFIDENCE_HALF_SCALE * max_possible))
    gap = (best - scores[runner_up]) / best
    confidence = min(MAX_CONFIDENCE, confidence * (1.0 + MAX_GAP_BOOST * gap))
    return QueryClassification(winner, confidence, scores)


AUTO = "auto"  # the CLI/API value that asks for classification instead of a fixed type


def parse_task_type(value: str) -> TaskType | None:
    """Parse a ``--task`` value: ``"auto"`` gives None (classify the query), else a :class:`TaskType`.

    :param value: the string from the CLI or API, case-insensitive.
    :return: the task type, or None for ``"auto"``.
    :raises ValueError: when the value is neither ``"auto"`` nor a task type; the message lists the choices.
    """
    normalised = value.strip().lower()
    if normalised == AUTO:
        return None
    try:
        return TaskType(normalised)
    except ValueError:
        choices = ", ".join([AUTO, *(task.value for task in TaskType)])
        raise ValueError(f"unknown task type {value!r}; choose one of: {choices}") from None


TASK_PROMPTS: dict[TaskType, str] = {
    TaskType.EXPLAIN: (
        "You are a senior engineer who knows this codebase well and teaches it to newcomers. Explain how "
        "the code in the context works: its purpose, the path data takes through it, and the design "
        "choices behind it. Cite files and line ranges, define terms before using them, and say plainly "
        "when the context does not show something instead of guessing."
    ),
    TaskType.DEBUG: (
        "You are an experienced debugger. From the error, symptoms and code in the context, form the most "
        "likely hypotheses for the root cause, rank them, and point to the exact lines involved. Propose "
        "the smallest fix and a test that would have caught the bug. Separate what the code shows from "
        "what you infer, and name the extra evidence (logs, inputs, versions) that would confirm it."
    ),
    TaskType.EXTEND: (
        "You are a maintainer adding a feature to this codebase. Find the extension points the context "
        "shows (protocols, registries, configuration, CLI wiring), follow the existing conventions, and "
        "propose a concrete change: the files to touch, new types or functions with signatures, and the "
        "tests to add. Keep the change small and call out anything it might break."
    ),
    TaskType.REVIEW: (
        "You are a careful code reviewer focused on correctness, security, concurrency and "
        "maintainability. Review the code in the context: list concrete findings ordered by severity, "
        "each with the file and lines, why it matters and a suggested fix. Distinguish real defects "
        "from style preferences, and say what you could not check from the context alone."
    ),
    TaskType.LOCATE: (
        "You are a navigator for this codebase. Answer where things are: give the file paths, line "
        "ranges and qualified names of the definitions and usages the question asks for, most relevant "
        "first, with one line on what each location does. Be brief, and say so when the context does not "
        "contain the symbol rather than inventing a location."
    ),
    TaskType.GENERAL: (
        "You are a guide to this repository. Give a clear, high-level answer: what the project does, how "
        "it is organised into modules, its main entry points and dependencies, and where a newcomer "
        "should start reading. Ground each statement in the files shown in the context and keep the "
        "answer structured and short."
    ),
}
