"""Query classification (spec: Query classification): weighted regex cues pick the task type of a question.

Each task type has a table of cue patterns with weights. A query's score for a type is the sum of the
weights of that type's patterns that match; the best-scoring type wins. Confidence is
``min(1, score / (0.5 x max possible))``, boosted by up to +30% by the gap to the runner-up. A query that
matches nothing is ``general`` with confidence 0. The cues are generic phrasing (``where is``, ``stack
trace``, ``add support for``), never text copied from a benchmark query.
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
# spec: Query classification — "general when nothing matches", with no confidence to claim.
NO_MATCH_CONFIDENCE = 0.0
NO_MATCH_TYPE = TaskType.GENERAL

# Pattern weights (spec: Query classification — "weighted regex patterns"). A strong cue on its own
# settles the type (a traceback is a debug question); a medium cue usually does; a weak cue only tips
# a balance between types.
STRONG = 3.0
MEDIUM = 2.0
WEAK = 1.0

# Equal scores go to the earlier type: symptoms of a failure (debug) and requests for a place (locate) are
# the most specific asks, a whole-repository question (general) the least, so it loses every tie.
TIE_BREAK_ORDER: tuple[TaskType, ...] = (
    TaskType.DEBUG,
    TaskType.LOCATE,
    TaskType.REVIEW,
    TaskType.EXTEND,
    TaskType.EXPLAIN,
    TaskType.GENERAL,
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


_RAW_PATTERNS: dict[TaskType, tuple[tuple[str, float], ...]] = {
    TaskType.DEBUG: (
        (r"\b(?:traceback|stack ?traces?)\b", STRONG),
        (r"\b(?:error|exception|fatal|panic)\s*:", STRONG),  # a pasted message: "Error: …"
        (r"\b(?-i:[A-Z][a-z]\w*(?:Error|Exception))\b", STRONG),  # an exception class name: KeyError
        (r"\bwhy (?:does|do|did|is|are|would|won't|doesn't|isn't)\b.{0,60}?"
         r"\b(?:fail|crash|break|throw|raise|hang|stuck|wrong|always|never|not)\w*", STRONG),
        (r"\bwhy\s+(?:isn't|aren't|doesn't|don't|didn't|won't|can't|wasn't|is\s+not|does\s+not|do\s+not)\b",
         STRONG),  # a negated why asks why something does not happen
        (r"\b(?:crash\w*|segfault\w*|segmentation fault|core dump\w*|not working|doesn't work|does not work"
         r"|isn't working|stopped working|broken)\b", STRONG),
        (r"\b(?:debug\w*|diagnos(?:e|es|is|ing)|root cause|troubleshoot\w*)\b"
         r"|\bwhat(?:'s|\s+is|\s+went)\s+wrong\b", STRONG),
        (r"\bfix(?:es|ed|ing)?\b", MEDIUM),
        (r"\bbug(?:s|gy)?\b", MEDIUM),
        (r"\b(?:fail|fails|failed|failing|failure)\b", MEDIUM),
        (r"\b(?:exceptions?|throws?|thrown|raises|raised)\b", MEDIUM),
        (r"\b(?:hangs?|hanging|freez\w+|stuck|deadlocks?|time[sd]? ?out|timeouts?|loops?\s+forever"
         r"|infinite loop|forever|never\s+(?:finishes|returns|ends|completes))\b", MEDIUM),
        (r"\b(?:exit(?:s|ed)?\s+(?:with|immediately)|exit (?:code|status)|non-?zero|memory leaks?"
         r"|out of memory|oom|blows? up|explod\w+|spik\w+)\b", MEDIUM),  # the process misbehaves
        (r"(?:^|\b(?:i'm|i am|we're|we are|keep|still)\s+)getting\b", MEDIUM),
        (r"\b(?:returns?|returning|gives?|shows?|prints?|outputs?|reports?)\s+"
         r"(?:no|nothing|none|null|empty|wrong|incorrect|zero|0)\b", MEDIUM),
        (r"\b(?:regression|flaky|intermittent\w*|sporadic\w*)\b|\b(?:after|since)\s+(?:the\s+|an?\s+)?"
         r"(?:upgrad\w+|updat\w+|yesterday|last (?:week|release))\b", MEDIUM),  # it used to work
        (r"\b(?:keeps?|kept)\s+\w+ing\b|\beven\s+(?:with|though|after|when|if)\b", MEDIUM),  # it recurs
        (r"\b(?:can't|cannot|can not|unable to|couldn't|won't)\b", MEDIUM),
        (r"\b(?:something(?:'s| is) (?:off|wrong)|weird|strange|odd|misbehav\w+)\b"
         r"|\bhelp\s+(?:me\s+)?(?:find|figure out|understand)\s+why\b", MEDIUM),
        (r"\b(?:errors?|empty|missing|unexpected\w*|incorrect|wrong|duplicat\w+|complains?|warnings?|warns"
         r"|caus(?:e|es|ed|ing)|disconnect\w*|refused|unreachable|permission denied|dropp?ed|degrad\w+"
         r"|slow\w*)\b", WEAK),  # a symptom word on its own
    ),
    TaskType.LOCATE: (
        (r"\bwhere(?:'s|\s+is|\s+are|\s+do|\s+does|\s+did|\s+can)\b", STRONG),
        (rf"\b(?:which|what)\s+{_CODE_NOUN}\b", STRONG),
        (r"\bfind\s+(?:the|all|every|where|me|each)\b", STRONG),
        (r"\blocat(?:e|ing)\b", STRONG),
        (r"\b(?:usages?|call ?sites?|references|occurrences|callers)\s+(?:of|to|for)\b", STRONG),
        (r"\b(?:who|what)\s+(?:calls|uses|imports|references|instantiates)\b", STRONG),
        (r"\b(?:definition|declaration)\s+of\b", MEDIUM),
        (r"\b(?:defined|declared|registered|instantiated)\b", MEDIUM),
        (r"\b(?:show me|point me to|take me to)\b", MEDIUM),
        (rf"\bthe\s+(?:code|{_CODE_NOUN})\s+(?:that|which|where)\b", MEDIUM),
        (r"\bis there an?\s+(?:function|class|method|helper|module|constant|util\w*)\b", MEDIUM),
        (r"\bpath\s+(?:of|to)\b", MEDIUM),
        (r"\b(?:jump to|go to|navigate to)\b", MEDIUM),
        (r"\b(?:grep|look up|search\s+(?:\w+\s+){0,3}?for)\b", MEDIUM),
        (r"\b(?:line numbers?|file ?paths?|file ?names?)\b", WEAK),
        (r"\b(?:lives?|kept|located|stored|sits?|owns?)\b", WEAK),
        (r"\bwhere\b", WEAK),
    ),
    TaskType.EXPLAIN: (
        (r"\bhow\s+(?:does|do|did|is|are|was|were)\b", STRONG),
        (r"\bexpla(?:in\w*|nation\w*)\b", STRONG),
        (r"\bwalk\s+(?:me\s+)?through\b", STRONG),
        (r"\bwhat\s+happens\s+(?:when|if|after|before|during)\b", STRONG),
        (r"\bhow\s+(?:the|a|an|this|that|our|we|it|they)\b|\bhow\s+(?:\w+\s+){0,5}?works?\b",
         MEDIUM),  # an embedded "how the X decides", "how it works"
        (r"\b(?:rundown|break(?:\s+\w+)?\s+down|breakdown|run me through|step[- ]by[- ]step|steps of"
         r"|how come|go(?:ing)? through|run through)\b", MEDIUM),
        (r"\bused\s+for\b|\bfor what\b|\bwhat\s+for\b", MEDIUM),
        (r"\b(?:describe|description of)\b", MEDIUM),
        (r"\b(?:understand\w*|make sense of|confus\w+)\b", MEDIUM),
        (r"\b(?:purpose|role|responsibilit\w+|meaning|rationale|intent)\b", MEDIUM),
        (r"\b(?:instead of|rather than|versus|difference between|compared? (?:to|with))\b", MEDIUM),
        (r"\bwhy\s+(?:do|did|does)\s+(?:we|you|they)\b", MEDIUM),  # asking for a design rationale
        (r"\b(?:tell me (?:how|why|what)|clarify|elaborate)\b", MEDIUM),
        (r"\bwhat(?:'s|\s+is|\s+are|\s+does|\s+do)\b", WEAK),  # any question opens this way: a weak cue
        (r"\bwhy\b", WEAK),
        (r"\b(?:lifecycle|life cycle|flow|algorithm|logic|mechanism|internals)\b", WEAK),
        (r"\b(?:examples?|intuition|conceptually|actually)\b", WEAK),
    ),
    TaskType.EXTEND: (
        (r"\bimplement\b", STRONG),  # the bare verb asks for new code; "implements" describes existing code
        (r"\bextend\w*\b", STRONG),
        (r"\bsupport(?:s|ing)?\s+(?:for|of)\b", STRONG),
        (r"\bnew\s+(?:endpoint|command|subcommand|feature|flag|option|provider|backend|plugin|language|parser"
         r"|api|route|field|column|method|class|module|tool|type|mode|format|integration)s?\b", STRONG),
        (r"\badd(?:s|ed|ing)?\b|\b(?:implementing|implementation of)\b", MEDIUM),
        (r"\b(?:plugins?|plug-ins?|hooks?|extension points?|adapters?|configurable|customi[sz]able"
         r"|pluggable)\b", MEDIUM),  # extension mechanisms
        (r"\b(?:create|build|write|introduce|integrate|wire up|hook up)\b", MEDIUM),
        (r"\b(?:i|we)(?:\s+(?:want|need|would like)|'d like)\b", MEDIUM),
        (r"\b(?:allow\w*|enable|scaffold\w*|generat(?:e|ing)|set up|integrations?)\b", MEDIUM),
        (r"\bsupport\b", MEDIUM),
        (r"\b(?:expos(?:e|ing)|wire|provid(?:e|ing)|overrid(?:e|able)|plug(?:ging)?\s+in|custom)\b", MEDIUM),
        (r"\b(?:let|allow)s?\s+(?:users?|callers?|clients?|people)\b", MEDIUM),
        (r"\b(?:feature|enhancement|capability)\b", MEDIUM),
        (r"\bcan we\s+(?:add|have|get|make|support|allow)\b", MEDIUM),
        (r"\bhow\s+(?:would|could|can|should)\s+(?:i|we)\b", WEAK),
        (r"\b(?:config(?:uration)? options?|flags?|settings?|parameters?|options?)\b", WEAK),
        (r"\bso\s+(?:that\s+)?(?:users?|it|we|you|the)\b", WEAK),
        (r"\blet'?s\b|\b(?:too|as well|also)\b", WEAK),
    ),
    TaskType.REVIEW: (
        (r"\b(?:review\w*|audit\w*)\b", STRONG),
        (r"\b(?:code smells?|anti-?patterns?|tech(?:nical)? debt)\b", STRONG),
        (r"\bis\s+(?:this|it|that|the\s+(?:\w+\s+){1,5}?)\s*(?:safe|correct|ok|okay|right|sound|idiomatic"
         r"|secure|a good idea)\b", STRONG),
        (r"\b(?:security|secure|vulnerab\w+|injection|xss|csrf|exploit\w*|unsafe|saniti[sz]\w+)\b", STRONG),
        (r"\b(?:race conditions?|data races?|concurren\w+|thread[- ]?safe\w*)\b", STRONG),
        (r"\b(?:critique|critici[sz]e|feedback|assess\w*|evaluate)\b", STRONG),
        (r"\b(?:any|potential|possible)\s+(?:\w+\s+)?(?:issues?|problems?|bugs?|risks?|flaws?|pitfalls?|leaks?"
         r"|mistakes?|holes?|gaps?)\b", STRONG),
        (r"\b(?:what could|could (?:this|it))\s+(?:go wrong|break|fail)\b"
         r"|\banything\s+(?:wrong|off|missing|risky|unsafe|problematic)\b", STRONG),
        (r"\b(?:sanity[- ]check\w*|double[- ]check\w*|look over|go over|second (?:pair of )?eyes)\b", STRONG),
        (r"\b(?:best practices?|style guide|conventions?|idiomatic|pep ?8|lint\w*)\b", MEDIUM),
        (r"\b(?:pull request|pr|diff|changes|patch|commit)\b", MEDIUM),
        (r"\b(?:check|look|scan)\s+(?:\w+\s+){0,5}?for\b|\bpoint out\b", MEDIUM),
        (r"\b(?:correct(?:ness|ly)?|properly|edge cases?|corner cases?|off[- ]by[- ]one|test coverage"
         r"|covered by tests)\b", MEDIUM),
        (r"\b(?:performance|inefficien\w*|bottlenecks?|maintainab\w+|readab\w+)\b", MEDIUM),
        (r"\b(?:follows?|(?:covers?|handles?)\s+(?:every|all|each))\b", MEDIUM),
        (r"\b(?:concerns?|worr(?:y|ied)|robust\w*|reliab\w+|risk\w*|danger\w*)\b", MEDIUM),
        (r"\b(?:merg(?:e|ing)|approve|lgtm|sign[- ]off)\b", MEDIUM),
        (r"\b(?:improve\w*|refactor\w*|clean ?up|simplif\w+)\b", WEAK),
        (r"\b(?:design|suspicious|flag)\b", WEAK),
    ),
    TaskType.GENERAL: (
        (r"\boverview\b", STRONG),
        (r"\bsummar(?:y|ies|ise|ize|ising|izing)\b", STRONG),
        (r"\b(?:high[- ]level|big picture|bird'?s[- ]eye)\b", STRONG),
        (r"\b(?:tour|onboard\w*|new (?:here|to (?:this|the))|get(?:ting)? started"
         r"|where (?:should|do|can) (?:i|we) (?:start|begin))\b", STRONG),
        (r"\bwhat\s+(?:(?:is|does)\s+)?(?:this|the)\s+(?:repo|repository|codebase|project|library|tool|app"
         r"|application)\w*(?:\s+(?:does|is))?\b", STRONG),  # "what is this repo", "what this project does"
        (r"\barchitecture\b", MEDIUM),
        (r"\b(?:tech(?:nology)? stack|languages?|frameworks?|libraries|dependencies|requirements)\b", MEDIUM),
        (r"\b(?:this|the)\s+(?:repo|repository|codebase|code ?base|project|application|app)\b", MEDIUM),
        (r"\b(?:organi[sz]\w+|structured?|layout|directory|folders?)\b", MEDIUM),
        (r"\blist\s+(?:all|the|of|every)\b", MEDIUM),
        (r"\b(?:main|key|core|major)\s+(?:modules|components|parts|pieces|packages|features|concepts"
         r"|dependencies)\b", MEDIUM),
        (r"\b(?:how many|how big|how large|size of)\b", MEDIUM),
        (r"\b(?:contribut\w+|map of|landscape|lay of the land)\b", MEDIUM),
        (r"\b(?:briefly|in a nutshell|in short|tl;?dr|elevator pitch)\b", MEDIUM),
        (r"\b(?:top[- ]level|subsystems?|fit together)\b", MEDIUM),
        (r"\btell me about\b", MEDIUM),
        (r"\b(?:entry ?points?|readme|statistics|stats)\b", MEDIUM),
        (r"\b(?:in general|overall|generally)\b", WEAK),
        (r"\b(?:source files|modules|packages|components)\b", WEAK),
    ),
}

DEFAULT_PATTERNS: dict[TaskType, tuple[WeightedPattern, ...]] = compile_patterns(_RAW_PATTERNS)


def classify(query: str, patterns: PatternTable = DEFAULT_PATTERNS) -> QueryClassification:
    """Classify a query into a task type with a confidence, as spec "Query classification" describes.

    :param query: the user's or agent's question.
    :param patterns: the cue table; defaults to :data:`DEFAULT_PATTERNS` (tests pass small tables).
    :return: the winning type, its boosted confidence and every type's raw score.
    """
    text = query.replace("\u2019", "'")  # typographic apostrophes read as plain ones
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
