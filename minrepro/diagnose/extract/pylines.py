"""Recognisers for the lines a Python traceback is made of, as real logs show them.

Pasted logs are messy: frames lose their indentation or their newlines (several
`File "..."` frames on one physical line), exception lines are wrapped in markdown
(`_**RuntimeError: ...**_`, backticks) or follow a log prefix, Jupyter prints its own
format. Each function here answers one question about one line; the state machine that
strings them together is in traceback.py.
"""

from __future__ import annotations

from minrepro.diagnose.extract.units import parse_int
from minrepro.model import Frame
from minrepro.patterns import lazy

HEADER = "Traceback (most recent call last)"
CAUSE_SEPARATOR = "The above exception was the direct cause"
CONTEXT_SEPARATOR = "During handling of the above exception"

#: A plausible exception class, optionally qualified: RuntimeError, torch.OutOfMemoryError,
#: torch.distributed.elastic.multiprocessing.errors.ChildFailedError, KeyboardInterrupt ...
#: Warnings are not exceptions here: a UserWarning is not a failure.
#: A bare `Error` only qualified (`gym.error.Error`): unqualified, "Error:" opens log lines.
#: Some stdlib names end otherwise: a debugger quit (`bdb.BdbQuit`), a child's timeout
#: (`subprocess.TimeoutExpired`), a queue read that timed out (`_queue.Empty`: a DataLoader's).
#: Some modules name theirs `error` in lower case: OpenCV's `cv2.error`, `struct.error` (a
#: truncated file read), `socket.error`, `zlib.error`; some none of these words at all.
_NAME = (r"(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure)"
         r"|Exception|StopIteration|StopAsyncIteration|BdbQuit|TimeoutExpired)"
         r"|(?:[A-Za-z_]\w*\.)+(?:Error|Empty|Full)"
         r"|(?:cv2|struct|socket|zlib|select|re|_socket)\.error"
         # a deep package's own class, named in full (torch._dynamo.exc.BackendCompilerFailed)
         r"|(?:[a-z_][a-z0-9_]*\.){2,}[A-Z]\w*(?:Failed|Missing|Unsupported|Timeout|Aborted)"
         # ... or any class of a package's exceptions module (torch._dynamo.exc.
         # FailOnRecompileLimitHit, requests.exceptions.ReadTimeout)
         r"|(?:[a-z_][a-z0-9_]*\.)+(?:exc|errors|exceptions)\.[A-Z]\w*")

_MARKDOWN_LEAD = " \t>*_#`"
_MARKDOWN_TRAIL = " \t*_`"

_EXC_ANCHORED = lazy(rf"(?P<type>{_NAME})(?::(?P<msg>.*)|\s*$)")
_RAISED = lazy(r"(?P<type>(?:[A-Za-z_]\w*\.)+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)"
               r"(?::(?P<msg>.*)|\s*$)")
# (or glued to the sentence before it, as a paste or a terminal joins them: "... may occur
# ().ValueError: num_samples should be ...")
_EXC_ANYWHERE = lazy(rf"(?:^|(?<=[\s`'\"(\[>*_|:])|(?<=[)\]]\.))(?P<type>{_NAME}):(?P<msg>.*)")
#: Built-in exceptions Python prints unqualified, and no package names its own class so: one
#: qualified by a single lower-case word is a sentence's last word glued to it ("... failed.
#: RuntimeError: CUDA error" pasted as `failed.RuntimeError`). (TimeoutError and
#: ConnectionError are left out: asyncio.TimeoutError, requests' ConnectionError.)
_GLUED_BUILTIN = lazy(r"[a-z]+\.(?P<name>(?:Runtime|Value|Type|Key|Index|Attribute|Assertion|"
                      r"ZeroDivision|Name|Import|ModuleNotFound|FileNotFound|UnboundLocal|"
                      r"Recursion|Overflow)Error|NotImplementedError)")
_CODE_KEYWORDS = ("except", "raise", "class", "import", "def", "isinstance", "catch", "with")

_FRAME = lazy(
    r'File "(?P<file>[^"]+)", line (?P<lineno>\d+)(?:, in (?P<func><[^>]*>|\S+))?(?P<rest>.*)')

#: Spyder (and IPython 8 outside a notebook): `File ~/x/train.py:362 in train_seg`, unquoted.
_BARE_FRAME = lazy(
    r"\s*File (?P<file>[~/\\.\w][^\s\"]*\.pyx?):(?P<lineno>\d+),? in (?P<func><[^>]*>|[\w.]+)")
_CUT_FRAME = lazy(
    r'\s*(?P<file>[^"\s]+)", line (?P<lineno>\d+), in (?P<func><[^>]*>|\S+)(?P<rest>.*)')
_JUPYTER_HEADER = lazy(rf"\s*(?P<type>{_NAME})\s{{2,}}Traceback \(most recent call last\)")
#: IPython 8: "File ~/x/linear.py:114, in Linear.forward(self, input)", "Cell In[5], line 1",
#: "Input In [5], in <cell line: 1>()"; IPython 7: "~/x/linear.py in forward(self, input)".
_JUPYTER_FRAME_NEW = lazy(
    r"(?:File )?(?P<file>\S.*?)(?::(?P<lineno>\d+),| line (?P<lineno2>\d+)|,) "
    r"(?:in (?P<func><[^>]*>|[\w.<>]+))?")
_JUPYTER_CELL = lazy(r"(?P<file>(?:Cell|Input) In ?\[\d*\]), line (?P<lineno>\d+)")
_JUPYTER_FRAME_OLD = lazy(r"(?P<file>[^\s\d-].*?) in (?P<func><[^>]*>|[\w.]+)(?:\(.*\))?\s*$")
_JUPYTER_ARROW = lazy(r"\s*-*> ?(?P<lineno>\d+)\s?(?P<code>.*)")
_JUPYTER_CONTEXT = lazy(r"\s*\d+\b")

_LOG_LINE = lazy(
    r"\s*(?:\[?\d{4}[-/]\d\d[-/]\d\d|\[?\d\d:\d\d:\d\d"
    r"|\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b"
    r"|[IWEF]\d{4} \d\d:|\d+%\||\{'|wandb:|```)")
_ELISION = ("...", "\u2026", "< truncated", "[Previous line repeated", "<truncated")


_PRIVATE_MODULE = lazy(r"_[a-z]\w*\.")  # `_pickle.UnpicklingError`, `_queue.Empty`


def strip_markdown(text: str) -> str:
    """The text without markdown's emphasis and quoting around it; the underscore of a
    private module's name (`_pickle.`) is kept."""
    stripped = text.strip(_MARKDOWN_LEAD)
    start = len(text) - len(text.lstrip(_MARKDOWN_LEAD))
    if start and text[start - 1] == "_" and _PRIVATE_MODULE.match(text, start - 1):
        return "_" + stripped
    return stripped


def exception_at_start(text: str) -> tuple[str, str] | None:
    """`RuntimeError: msg` at the start of the line (after indentation/markdown) -> (type, msg).

    A name alone (`KeyboardInterrupt`) counts too; callers only accept that inside a traceback.
    """
    match = _EXC_ANCHORED.match(strip_markdown(text))
    if match is None:
        return None
    return unglued(match["type"]), clean_message(match["msg"] or "")


def unglued(name: str) -> str:
    """A built-in exception's name without the word a paste glued to it (`failed.RuntimeError`
    -> RuntimeError); any other name as it is."""
    glued = _GLUED_BUILTIN.fullmatch(name)
    return glued["name"] if glued else name


def raised_at_start(text: str) -> tuple[str, str] | None:
    """After a traceback's frames, the line Python ends it with where `exception_at_start`
    does not know the class's name (`torch._inductor.exc.TritonMissing: ...`): a qualified
    name, or a CamelCase one, at column 0, then `:` or nothing."""
    match = _RAISED.match(text)
    if match is None:
        return None
    return match["type"], clean_message(match["msg"] or "")


def exception_anywhere(text: str) -> tuple[str, str] | None:
    """The first `Name: msg` in the line that is not code (`except KeyError:`) -> (type, msg)."""
    for match in _EXC_ANYWHERE.finditer(text):
        before = text[: match.start()].rstrip(" (")
        if before.endswith(_CODE_KEYWORDS):
            continue
        return unglued(match["type"]), clean_message(match["msg"])
    return None


#: Hydra's short report of a failed `instantiate` (the default, without HYDRA_FULL_ERROR):
#: `Error in call to target 'pkg.fn':` then the exception's repr on the next line,
#: `TypeError("fn() got an unexpected keyword argument 'x'")`
_TARGET = lazy(r"\s*Error in call to target '(?P<target>[^']+)':\s*$")
_REPR = lazy(rf"\s*(?P<type>{_NAME})\((?P<q>['\"])(?P<msg>.*)(?P=q),?\)\s*$")


def instantiate_target(text: str) -> str | None:
    """The target of Hydra's `Error in call to target 'X':` line, else None."""
    match = _TARGET.match(text) if "call to target" in text else None
    return match["target"] if match else None


def exception_repr(text: str) -> tuple[str, str] | None:
    """A whole line that is an exception's repr, `TypeError("msg")` -> (type, msg)."""
    match = _REPR.match(text)
    return (match["type"], match["msg"]) if match else None


def clean_message(message: str) -> str:
    return message.strip().rstrip(_MARKDOWN_TRAIL)


def may_hold_frame(text: str) -> bool:
    """A cheap test before `frames_in`: the line has a frame's marks."""
    return '", line ' in text or text.lstrip().startswith("File ")


def frames_in(text: str) -> list[Frame]:
    """Every `File "x", line N, in f` in the line; code that follows on the same line is kept.

    A frame whose start was cut off in the paste (`...site-packages/x.py", line 7, in f`)
    counts too, and Spyder's unquoted `File ~/x.py:7 in f`.
    """
    if 'File "' not in text:
        bare = _BARE_FRAME.match(text) if "File " in text else None
        if bare is not None:
            return [Frame(file=bare["file"], line=int(bare["lineno"]), function=bare["func"])]
        cut = _CUT_FRAME.match(text)
        if cut is None:
            return []
        return [Frame(file=cut["file"], line=int(cut["lineno"]), function=cut["func"],
                      code=cut["rest"].strip() or None)]
    frames = []
    for chunk in text.split('File "')[1:]:
        match = _FRAME.match('File "' + chunk)
        if match is None:
            continue
        code = match["rest"].strip() or None
        frames.append(Frame(file=match["file"], line=parse_int(match["lineno"]) or 0,
                            function=match["func"], code=code))
    return frames


def jupyter_header(text: str) -> str | None:
    match = _JUPYTER_HEADER.match(text)
    return match["type"] if match else None


def jupyter_frame(text: str) -> Frame | None:
    """A Jupyter frame header line (IPython 7 or 8 style)."""
    if text[:1].isspace():
        return None
    cell = _JUPYTER_CELL.match(text)
    if cell:
        return Frame(file=cell["file"], line=int(cell["lineno"]), function=None)
    match = _JUPYTER_FRAME_NEW.match(text)
    if match and (match["lineno"] or match["lineno2"]) and match["func"]:
        lineno = int(match["lineno"] or match["lineno2"])
        return Frame(file=match["file"], line=lineno, function=match["func"])
    match = _JUPYTER_FRAME_OLD.match(text)
    if match:
        return Frame(file=match["file"], line=None, function=match["func"])
    return None


def jupyter_arrow(text: str) -> tuple[int, str] | None:
    """`----> 1 code` / `--> 114 code`: the current line of the frame above."""
    if "->" not in text:
        return None
    match = _JUPYTER_ARROW.match(text)
    return (int(match["lineno"]), match["code"].strip()) if match else None


#: rich's boxed traceback (`rich.traceback.install()`, typer): a frame's header and the
#: line it ran (`❱`), between box borders; long paths wrapped over lines are not read.
_RICH_FRAME = lazy(r"^\s*│\s(?P<file>\S+\.pyx?):(?P<lineno>\d+) in (?P<func>\S+)\s*│\s*$")
_RICH_ARROW = lazy(r"^\s*│\s*❱\s*(?P<lineno>\d+)\s│\s?(?P<code>.*?)\s*│\s*$")


def is_rich_box(stripped: str) -> bool:
    return stripped[:1] in ("│", "╰", "╭")


def rich_frame(text: str) -> Frame | None:
    match = _RICH_FRAME.match(text)
    return (Frame(file=match["file"], line=int(match["lineno"]), function=match["func"])
            if match else None)


def rich_arrow(text: str) -> tuple[int, str] | None:
    match = _RICH_ARROW.match(text) if "❱" in text else None
    return (int(match["lineno"]), match["code"].replace("│", "").strip()) if match else None


def is_jupyter_context(text: str) -> bool:
    return _JUPYTER_CONTEXT.match(text) is not None


def is_caret_line(stripped: str) -> bool:
    """Python 3.11+ position markers: `^^^^^`, `~~~~^^^^~~`."""
    return bool(stripped) and not stripped.strip("^~ ")


def is_elision(stripped: str) -> bool:
    return stripped.startswith(_ELISION) or (stripped.startswith("...") and "lines" in stripped)


def ends_message(text: str) -> bool:
    """Lines that cannot continue an exception message: log records, progress bars, fences."""
    return _LOG_LINE.match(text) is not None


def chain_kind(text: str) -> str | None:
    if CAUSE_SEPARATOR in text:
        return "cause"
    if CONTEXT_SEPARATOR in text:
        return "context"
    return None
