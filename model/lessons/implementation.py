"""The numbers of the lesson §4.9, the minimal implementation: the lesson's own listing, run.

:func:`attention` and :class:`MultiHeadAttention` are the lesson's code as it prints it (its
comments in English here; :func:`translated_listing` writes them in the reader's language, the
lesson's own Chinese in Chinese). :func:`listing` reads their live source, numbered as one
listing, so that what the page shows is what runs. :func:`run_traced` runs them with a line
tracer (:func:`sys.settrace`, for these functions' frames only) and keeps, for every line that
ran, the tensors it made: the page writes their shapes and values beside the line.

Two runs: :func:`hand_run`, ``attention()`` on the §4.3 worked example
(:func:`model.lessons.hand.seed_inputs`), and :func:`layer_run`, ``MultiHeadAttention`` with
the weights of one attention module of an own model (its W_Q, W_K, W_V, W_O copied), on the
very inputs that module received in a forward pass on the user's sentence; the run also returns
what the module itself gave, to compare.
"""

from __future__ import annotations

import inspect
import io
import math
import re
import sys
import tokenize
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from i18n import N_, _
from model.lessons import hand
from model.lessons.network import allowed, attention_module, own_network, run, to_numpy
from model.lessons.source import source_lines
from model.own.hooks import INPUT, hook_name
from model.trace import AttentionTrace

# The lesson's listing starts with these imports (this module's own, among the others).
IMPORTS = ("import math", "import torch", "import torch.nn.functional as F")


def attention(Q, K, V, mask=None):
    """
    Q: (B, h, L_q, d_k) queries
    K: (B, h, L_k, d_k) keys
    V: (B, h, L_k, d_v) values
    """
    d_k = Q.size(-1)
    # ① scores: every q dotted with every k → (B, h, L_q, L_k)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    # ② mask: fill the positions not to be seen with -∞ (causal mask / padding)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float('-inf'))
    # ③ normalise: each row becomes weights that sum to 1
    weights = F.softmax(scores, dim=-1)
    # ④ weighted sum: mix all the V
    return torch.matmul(weights, V), weights  # output + weights (can be visualised)


class MultiHeadAttention(torch.nn.Module):
    def __init__(self, d_model=512, h=8):
        super().__init__()
        self.d_k = d_model // h  # 64 dimensions per head
        self.h = h
        self.W_Q = torch.nn.Linear(d_model, d_model)  # makes Q
        self.W_K = torch.nn.Linear(d_model, d_model)  # makes K
        self.W_V = torch.nn.Linear(d_model, d_model)  # makes V
        self.W_O = torch.nn.Linear(d_model, d_model)  # mixes after concatenating

    def forward(self, query, key, value, mask=None):
        B = query.size(0)
        # project → split into h heads: (B, L, 512) → (B, h, L, 64)
        Q = self.W_Q(query).view(B, -1, self.h, self.d_k).transpose(1, 2)
        K = self.W_K(key).view(B, -1, self.h, self.d_k).transpose(1, 2)
        V = self.W_V(value).view(B, -1, self.h, self.d_k).transpose(1, 2)
        out, w = attention(Q, K, V, mask)
        # join the heads back: (B, h, L, 64) → (B, L, 512)
        out = out.transpose(1, 2).contiguous().view(B, -1, self.h * self.d_k)
        return self.W_O(out), w


# The listing's comments and docstring lines as written above, in English; the page shows them
# in its reader's language (in Chinese the lesson's own words). A test checks every one is here.
CODE_COMMENTS = (
    N_("Q: (B, h, L_q, d_k) queries"),
    N_("K: (B, h, L_k, d_k) keys"),
    N_("V: (B, h, L_k, d_v) values"),
    N_("① scores: every q dotted with every k → (B, h, L_q, L_k)"),
    N_("② mask: fill the positions not to be seen with -∞ (causal mask / padding)"),
    N_("③ normalise: each row becomes weights that sum to 1"),
    N_("④ weighted sum: mix all the V"),
    N_("output + weights (can be visualised)"),
    N_("64 dimensions per head"),
    N_("makes Q"),
    N_("makes K"),
    N_("makes V"),
    N_("mixes after concatenating"),
    N_("project → split into h heads: (B, L, 512) → (B, h, L, 64)"),
    N_("join the heads back: (B, h, L, 64) → (B, L, 512)"),
)

MASK = (("lesson_masks", N_("the causal mask (writing blindfolded)")),)
HEADS = (("lesson_multihead", N_("h heads of d_k = d_model / h numbers")),)
# Where a line of the listing is explained, by a piece of its code: (fragment, (url path of the
# lesson, what it explains there)), in the order of the lesson's table of 4.9.
SECTIONS = (
    ("d_k = Q.size(-1)", (("lesson_hand", N_("d_k, the length of q and k")),)),
    ("torch.matmul(Q, K.transpose(-2, -1))",
     (("lesson_hand", N_("Step 2: the scores")),
      ("lesson_scaling", N_("÷√d_k keeps softmax from saturating")))),
    ("if mask is not None", MASK),
    ("masked_fill", MASK),
    ("F.softmax", (("lesson_hand", N_("Step 4: softmax, weights that sum to 1")),)),
    ("torch.matmul(weights, V)", (("lesson_hand", N_("Step 5: the weighted sum")),)),
    ("self.d_k = d_model // h", HEADS),
    ("self.h = h", HEADS),
    ("torch.nn.Linear(d_model, d_model)  # makes",
     (("lesson_qkv", N_("`W_Q`, `W_K` and `W_V` make the queries, keys and values")),)),
    ("self.W_O = ", (("lesson_multihead", N_("`W_O` mixes the heads")),)),
    (".view(B, -1, self.h, self.d_k).transpose(1, 2)",
     (("lesson_multihead", N_("the split into heads")),)),
    ("out.transpose(1, 2).contiguous()",
     (("lesson_multihead", N_("the heads joined side by side")),)),
    ("return self.W_O(out), w", (("lesson_multihead", N_("`W_O` after the concatenation")),)),
)


@dataclass(frozen=True)
class Line:
    """One line of the listing.

    Attributes:
        number: its number in the listing (1-based).
        code: its text, as the module has it (comments in English).
        function: ``"attention"``, ``"__init__"``, ``"forward"`` or ``""`` (imports, blanks,
            the ``class`` line).
        sections: ``(url path, what it explains)`` of the lessons the line belongs to.
    """

    number: int
    code: str
    function: str
    sections: tuple[tuple[str, str], ...] = ()


def _functions() -> tuple:
    return (attention, MultiHeadAttention)


def listing() -> list[Line]:
    """The lesson's listing, read from this module's live source: the imports, ``attention()``
    and ``MultiHeadAttention``, one blank line between them.

    Returns:
        one :class:`Line` per line of the listing, numbered from 1.
    """
    rows: list[tuple[str, str]] = [(text, "") for text in IMPORTS]
    for item in _functions():
        lines, start = source_lines(item)
        names = _line_functions(item, start, len(lines))
        rows.append(("", ""))
        rows += [(text.rstrip("\n"), names[i]) for i, text in enumerate(lines)]
    return [Line(i + 1, text, name, _sections(text)) for i, (text, name) in enumerate(rows)]


def _line_functions(item, start: int, count: int) -> list[str]:
    """Which function each of ``count`` source lines from line ``start`` belongs to."""
    names = [""] * count
    if inspect.isfunction(item):
        members = [item]
    else:
        members = [value for value in vars(item).values() if inspect.isfunction(value)]
    for function in members:
        lines, first = source_lines(function)
        for offset in range(len(lines)):
            index = first - start + offset
            if 0 <= index < count:
                names[index] = function.__name__
    return names


def _sections(code: str) -> tuple[tuple[str, str], ...]:
    return tuple(s for fragment, sections in SECTIONS if fragment in code for s in sections)


def line_numbers() -> dict[tuple[str, int], int]:
    """``(function name, line in this file) -> line of the listing``, for the traced
    functions."""
    numbers = {}
    shown = listing()
    index = len(IMPORTS)
    for item in _functions():
        lines, start = source_lines(item)
        index += 1  # the blank line before it
        for offset in range(len(lines)):
            line = shown[index + offset]
            numbers[(line.function, start + offset)] = line.number
        index += len(lines)
    return numbers


def _comment_tokens(code: str) -> list[tokenize.TokenInfo]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    return [token for token in tokens if token.type == tokenize.COMMENT]


def translated_line(code: str) -> str:
    """One line of the listing in the current language: its comment (or, inside the
    docstring, its text) translated when it is one of :data:`CODE_COMMENTS`; the code and its
    indentation unchanged."""
    stripped = code.strip()
    if stripped in CODE_COMMENTS:  # a line of the docstring
        return code[:len(code) - len(code.lstrip())] + _(stripped)
    position = _comment_start(code)
    if position is None:
        return code
    text = code[position + 1:].strip()
    if text not in CODE_COMMENTS:
        return code
    return code[:position] + "# " + _(text)


def _comment_start(code: str) -> int | None:
    """Where the comment of one line of code starts (None: it has none)."""
    tokens = _comment_tokens(code.lstrip())
    if not tokens:
        return None
    indent = len(code) - len(code.lstrip())
    return indent + tokens[0].start[1]


def translated_listing(lines: list[Line] | None = None) -> str:
    """The whole listing in the current language (see :func:`translated_line`)."""
    return "\n".join(translated_line(line.code) for line in (lines or listing()))


# --- running the listing line by line ---------------------------------------------------------

@dataclass
class Seen:
    """What one line of the listing made when it ran.

    Attributes:
        values: ``name -> value`` of the names the line bound (tensors as float64 numpy, bool
            ones as bool; the
            returned values under ``"return"``; a function's arguments on its ``def`` line).
        shapes: ``name -> shape`` of each tensor among them (before any conversion).
    """

    values: dict = field(default_factory=dict)
    shapes: dict = field(default_factory=dict)


def _keep(value):
    """A value worth showing: a tensor as float64 numpy, a number, None; anything else not."""
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool:
            return value.detach().cpu().numpy()
        return value.detach().to("cpu", torch.float64).numpy()
    if isinstance(value, bool | int | float) or value is None:
        return value
    return _SKIP


_SKIP = object()


def _note(seen: Seen, name: str, value) -> None:
    kept = _keep(value)
    if kept is _SKIP:
        if isinstance(value, tuple) and all(isinstance(v, torch.Tensor) for v in value):
            for i, v in enumerate(value):
                _note(seen, f"{name}[{i}]", v)
        return
    seen.values[name] = kept
    if isinstance(value, torch.Tensor):
        seen.shapes[name] = tuple(int(n) for n in value.shape)


def run_traced(function, *args, **kwargs) -> tuple[object, dict[int, Seen]]:
    """Run ``function`` (one of this module's, or anything that calls them) with a line tracer
    on the listing's functions, and return its result and what each line of the listing made.

    A line's names are those its frame bound or rebound while it ran (compared by identity:
    ``scores = scores.masked_fill(…)`` shows the new ``scores``). A line that did not run (the
    mask's, without a mask) has no entry. Other threads and other functions are not traced;
    the tracer there before (a debugger, coverage) is put back afterwards.

    Returns:
        ``(result, {line of the listing: Seen})``.
    """
    numbers = line_numbers()
    codes = {attention.__code__, MultiHeadAttention.__init__.__code__,
             MultiHeadAttention.forward.__code__}
    seen: dict[int, Seen] = {}

    def local_tracer(frame, event, arg):
        name = frame.f_code.co_name
        state = frames[id(frame)]
        now = dict(frame.f_locals)
        if state["line"] is not None:
            entry = seen.setdefault(numbers[(name, state["line"])], Seen())
            for key, value in now.items():
                if key != "self" and (key not in state["locals"]
                                      or state["locals"][key] is not value):
                    _note(entry, key, value)
        if event == "line":
            state.update(line=frame.f_lineno, locals=now)
        elif event == "return":
            if state["line"] is not None and arg is not None:
                _note(seen.setdefault(numbers[(name, state["line"])], Seen()), "return", arg)
            frames.pop(id(frame), None)
        return local_tracer

    frames: dict[int, dict] = {}

    def global_tracer(frame, event, arg):
        if event != "call" or frame.f_code not in codes:
            return None
        name = frame.f_code.co_name
        entry = seen.setdefault(numbers[(name, frame.f_code.co_firstlineno)], Seen())
        arguments = dict(frame.f_locals)
        for key, value in arguments.items():
            if key != "self":
                _note(entry, key, value)
        frames[id(frame)] = {"line": None, "locals": arguments}
        return local_tracer

    before = sys.gettrace()
    sys.settrace(global_tracer)
    try:
        result = function(*args, **kwargs)
    finally:
        sys.settrace(before)
    return result, seen


# --- the two runs -----------------------------------------------------------------------------

@dataclass(frozen=True)
class HandRun:
    """``attention()`` of the listing on the §4.3 example (one batch, one head, one query).

    Attributes:
        words: the four words, in the current language.
        seen: what each line of the listing made.
        output: ``[d_v]`` what it returned; weights: ``[n]``.
        lesson: the lesson's own calculation, rounded as it writes it
            (:func:`model.lessons.hand.hand_steps` with two decimals).
        exact: the same calculation, exact.
    """

    words: tuple[str, ...]
    seen: dict[int, Seen]
    output: np.ndarray
    weights: np.ndarray
    lesson: hand.HandSteps
    exact: hand.HandSteps


def hand_run() -> HandRun:
    """Run the listing's ``attention()`` on §4.3's q, K and V (float64), traced.

    Returns:
        a :class:`HandRun`; its output rounds to the lesson's [0.85, 1.25] up to the lesson's
        own rounding of each step.
    """
    inputs = hand.seed_inputs()
    # [batch, head, query, d_k]
    Q = torch.tensor(inputs.q, dtype=torch.float64)[None, None, None, :]
    K = torch.tensor(inputs.K, dtype=torch.float64)[None, None]  # [batch, head, key, d_k]
    V = torch.tensor(inputs.V, dtype=torch.float64)[None, None]  # [batch, head, key, d_v]
    with torch.no_grad():
        (output, weights), seen = run_traced(attention, Q, K, V)
    return HandRun(inputs.words, seen, output[0, 0, 0].numpy(), weights[0, 0, 0].numpy(),
                   hand.hand_steps(inputs, hand.SEED_DECIMALS), hand.hand_steps(inputs))


@dataclass(frozen=True)
class LayerRun:
    """``MultiHeadAttention`` of the listing, with one own attention module's weights, on the
    inputs that module received.

    Attributes:
        name, layer: which module; d_model, n_heads: its sizes.
        query_tokens, key_tokens: the axes' tokens.
        seen: what each line of the listing made (``__init__``'s lines: the attributes it set).
        output: ``[query, d_model]`` what the listing returned; weights: ``[head, query, key]``.
        module_output, module_weights: what the model's own module returned on the same inputs.
        trace_weights: the trace's weights of that module, ``[head, query, key]``.
        allowed: the mask the module received, bool ``[query, key]`` (True = may attend).
    """

    name: str
    layer: int
    d_model: int
    n_heads: int
    query_tokens: list[str]
    key_tokens: list[str]
    seen: dict[int, Seen]
    output: np.ndarray
    weights: np.ndarray
    module_output: np.ndarray
    module_weights: np.ndarray
    trace_weights: np.ndarray
    allowed: np.ndarray

    @property
    def output_difference(self) -> float:
        """The largest |listing − module| of the outputs."""
        return float(np.abs(self.output - self.module_output).max())

    @property
    def weights_difference(self) -> float:
        """The largest |listing − module| of the weights."""
        return float(np.abs(self.weights - self.module_weights).max())

    @property
    def trace_difference(self) -> float:
        """The largest |listing − trace| of the weights."""
        return float(np.abs(self.weights - self.trace_weights).max())

    def head_trace_difference(self, head: int) -> float:
        """The largest |listing − trace| of head ``head``'s weights."""
        return float(np.abs(self.weights[head] - self.trace_weights[head]).max())


def copied_module(module) -> MultiHeadAttention:
    """The listing's ``MultiHeadAttention`` at ``module``'s sizes, its W_Q, W_K, W_V, W_O
    copied from ``module`` (an own attention module), on its device and in its precision.

    Raises:
        ValueError: ``module`` rotates Q and K by position (RoPE), which the listing does not.
    """
    return _copied(module)[0]


def _copied(module) -> tuple[MultiHeadAttention, dict[int, Seen]]:
    """:func:`copied_module`, built under the tracer: also what ``__init__``'s lines made."""
    if getattr(module, "rope_base", None) is not None:
        raise ValueError(_("This model rotates queries and keys by position (RoPE), which the "
                           "lesson's listing does not do: its numbers would differ."))
    weight = module.W_Q.weight
    with torch.no_grad():
        copy, seen = run_traced(MultiHeadAttention, d_model=int(weight.shape[1]),
                                h=int(module.n_heads))
    copy.load_state_dict({key: value for key, value in module.state_dict().items()
                          if re.match(r"W_[QKVO]\.", key)})
    copy = copy.to(device=weight.device, dtype=weight.dtype).eval()
    _init_lines(copy, seen)
    return copy, seen


def layer_run(loaded, trace: AttentionTrace, name: str, layer: int) -> LayerRun:
    """Record what attention module ``name`` of ``layer`` receives and returns in one forward
    pass of the own network on the trace's ids, then run the listing's
    ``MultiHeadAttention`` with its weights on the same ``query``, ``key``, ``value`` and
    ``mask``, traced line by line.

    Args:
        loaded: an own model; ``trace``: a trace of it.
        name: the attention kind (``"encoder.self"``…); ``layer``: its layer.

    Returns:
        a :class:`LayerRun`: shapes read ``(B, L, d_model) → (B, h, L, d_k)`` on the way.
    """
    network = own_network(loaded)
    module = attention_module(network, name, layer)
    store, _logits = run(loaded, trace, [module], [module])
    received = store[hook_name(module) + INPUT]  # query, key, value, mask, …
    module_output, module_weights = store[hook_name(module)]
    copy, seen = _copied(module)
    with torch.inference_mode():
        (output, weights), forward = run_traced(
            copy.forward, received["query"], received["key"], received["value"],
            received["mask"])
    seen.update(forward)
    q_tokens, k_tokens = ([str(t) for t in axis] for axis in trace.axes(name))
    return LayerRun(
        name=name, layer=int(layer), d_model=int(module.W_Q.weight.shape[1]),
        n_heads=int(module.n_heads), query_tokens=q_tokens, key_tokens=k_tokens, seen=seen,
        output=to_numpy(output[0]), weights=to_numpy(weights[0]),
        module_output=to_numpy(module_output[0]), module_weights=to_numpy(module_weights[0]),
        trace_weights=np.stack([trace.weights(name, layer, head)
                                for head in range(module.n_heads)]).astype(np.float64),
        allowed=allowed(received["mask"], len(q_tokens), len(k_tokens)))


def _init_lines(copy: MultiHeadAttention, seen: dict[int, Seen]) -> None:
    """What each ``self.X = …`` line of ``__init__`` set on ``copy`` (a layer: its weight)."""
    for line in listing():
        found = re.match(r"\s*self\.(\w+)\s*=", line.code)
        if line.function != "__init__" or not found:
            continue
        value = getattr(copy, found.group(1))
        entry = seen.setdefault(line.number, Seen())
        if isinstance(value, torch.nn.Linear):
            _note(entry, f"self.{found.group(1)}.weight", value.weight)
        else:
            _note(entry, f"self.{found.group(1)}", value)


def peeked(shape: tuple[int, ...], head: int = 0, row: int = 0) -> tuple[int | None, int | None]:
    """Which head and row :func:`peek` reads of a tensor of ``shape`` (None: that axis has
    one entry, or the tensor none)."""
    def used(axis: int, index: int) -> int | None:
        return min(index, shape[axis] - 1) if shape[axis] > 1 else None

    if len(shape) == 4:
        return used(1, head), used(2, row)
    if len(shape) in (2, 3):
        return None, used(len(shape) - 2, row)
    return None, None


def peek(values: np.ndarray, head: int = 0, row: int = 0, count: int = 4) -> np.ndarray:
    """A few numbers of a tensor a line made, for the page: the first batch, head ``head``
    (4-d tensors), row ``row`` (clipped to the tensor's rows), at most ``count`` entries.

    Args:
        values: an array ``[B, h, L, d]``, ``[B, L, d]``, ``[L, d]`` or ``[d]``.

    Returns:
        ``[≤ count]`` the numbers.
    """
    array = np.asarray(values)
    if array.ndim == 4:
        array = array[0, min(head, array.shape[1] - 1)]
    elif array.ndim == 3:
        array = array[0]
    if array.ndim == 2:
        array = array[min(row, array.shape[0] - 1)]
    return array.reshape(-1)[:count]


def line_of(fragment: str) -> int:
    """The number of the first line of the listing whose code holds ``fragment``.

    Raises:
        ValueError: no line holds it.
    """
    for line in listing():
        if fragment in line.code:
            return line.number
    raise ValueError(f"no line of the listing holds {fragment!r}")


def lesson_numbers(run: HandRun) -> dict[int, np.ndarray]:
    """The numbers §4.3 writes for what a line of ``attention()`` computes, rounded as it
    writes them: ``{line: values}`` for the scores ÷√d_k (Step 3), the weights (Step 4) and
    the output (Step 5)."""
    return {line_of("/ math.sqrt(d_k)"): run.lesson.scaled,
            line_of("F.softmax"): run.lesson.weights,
            line_of("torch.matmul(weights, V)"): run.lesson.output}


def masked_entries(seen: dict[int, Seen]) -> int | None:
    """How many scores the mask's line set to −∞ (None: the line did not run, no mask)."""
    entry = seen.get(line_of("masked_fill"))
    if entry is None or "scores" not in entry.values:
        return None
    return int(np.isneginf(entry.values["scores"]).sum())


@dataclass(frozen=True)
class Block:
    """Lines of the listing shown together: a statement with the comments above it (a ``def``
    with its docstring, the ``class`` line with the ``def`` after it).

    Attributes:
        lines: the block's lines, in order.
        sections: the lessons its lines belong to (each once, in order).
    """

    lines: tuple[Line, ...]
    sections: tuple[tuple[str, str], ...]

    @property
    def numbers(self) -> tuple[int, ...]:
        """The listing's numbers of the block's lines."""
        return tuple(line.number for line in self.lines)

    @property
    def function(self) -> str:
        """The function the block's last line belongs to (``""``: the imports)."""
        return self.lines[-1].function


def blocks(lines: list[Line] | None = None) -> list[Block]:
    """The listing cut into :class:`Block` s (blank lines dropped)."""
    lines = lines or listing()
    found: list[Block] = []
    current: list[Line] = []
    in_docstring = False

    def close() -> None:
        if current:
            sections = tuple(dict.fromkeys(s for line in current for s in line.sections))
            found.append(Block(tuple(current), sections))
            current.clear()

    for index, line in enumerate(lines):
        text = line.code.strip()
        if not text:
            close()
            continue
        current.append(line)
        following = lines[index + 1].code.strip() if index + 1 < len(lines) else ""
        if text.startswith('"""'):
            in_docstring = not in_docstring if text == '"""' else in_docstring
            if not in_docstring:
                close()
            continue
        if in_docstring or text.startswith("#") or text.startswith("class "):
            continue
        if text.startswith("def ") or (text.startswith("import ")
                                       and following.startswith("import ")):
            continue
        close()
    close()
    merged: list[Block] = []
    for block in found:  # lines doing the same thing, one after another: one block
        if merged and block.sections and block.sections == merged[-1].sections:
            merged[-1] = Block(merged[-1].lines + block.lines, block.sections)
        else:
            merged.append(block)
    return merged
