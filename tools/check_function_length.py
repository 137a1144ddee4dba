#!/usr/bin/env python3
"""Checks that the library functions of src/weft stay short (STYLE.md habit 15; issue 23).

A function's length runs from the line its signature starts on to the line of its closing brace;
lambdas and local classes count as part of the function that encloses them. Tests, test helpers and
src/weft/testing/ are not library code and are not measured.

Prints every function over SOFT_LIMIT lines as `path:line: name: N lines` and exits 1 when one is
over HARD_LIMIT or more than MAX_OVER_SOFT are over SOFT_LIMIT; run by ctest as
check_function_length. `--over N` lists every function over N lines and always exits 0.

The scanner is a tokenizer plus brace matching, not a C++ parser: it skips comments, string and
character literals (raw strings included) and preprocessor lines, and it takes a `{` at namespace or
class scope to open a function body when the text before it has a parameter list and no `=`.
"""
import argparse
import pathlib
import re
import sys

SOFT_LIMIT = 80
HARD_LIMIT = 120
MAX_OVER_SOFT = 5

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE_ROOT = ROOT / "src" / "weft"

PUNCTUATORS = ("::", "->", "==", "!=", "<=", ">=")
STRING_PREFIXES = {"u8", "u", "U", "L"}
RAW_PREFIXES = {"R", "u8R", "uR", "UR", "LR"}
CLASS_KEYS = {"class", "struct", "union"}
ACCESS = {"public", "private", "protected"}
QUALIFIERS = {"const", "noexcept", "override", "final", "volatile", "&", "&&"}
# Identifiers that take parentheses but never name the function being defined.
NOT_A_NAME = {"decltype", "alignas", "noexcept", "__attribute__", "sizeof", "requires", "throw"}
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.']+)*")


class Token:
    __slots__ = ("text", "line")

    def __init__(self, text, line):
        self.text = text
        self.line = line


def tokenize(text):
    """Yields the tokens of `text`; literals become the placeholders '"' and "'"."""
    i = 0
    line = 1
    n = len(text)
    at_line_start = True  # only whitespace so far on this line: a '#' starts a directive
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            at_line_start = True
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":
            line += 1
            i += 2
            continue
        if c == "#" and at_line_start:
            # A directive runs to the end of the line, continuation lines included.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    line += 1
                    i += 1
                elif text.startswith("/*", i):
                    end = text.find("*/", i + 2)
                    end = n if end < 0 else end + 2
                    line += text.count("\n", i, end)
                    i = end
                    continue
                i += 1
            continue
        at_line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
            continue
        if c.isalpha() or c == "_":
            word = IDENTIFIER.match(text, i).group(0)
            after = i + len(word)
            if after < n and text[after] == '"' and word in RAW_PREFIXES:
                start_line = line
                i = skip_raw_string(text, after)
                line += text.count("\n", after, i)
                yield Token('"', start_line)
                continue
            if after < n and text[after] in "\"'" and word in STRING_PREFIXES:
                start_line = line
                i = skip_quoted(text, after)
                line += text.count("\n", after, i)
                yield Token(text[after], start_line)
                continue
            yield Token(word, line)
            i = after
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            # A pp-number, so that the digit separator of 1'000 is not read as a quote.
            number = NUMBER.match(text, i).group(0)
            yield Token(number, line)
            i += len(number)
            continue
        if c in "\"'":
            start_line = line
            end = skip_quoted(text, i)
            line += text.count("\n", i, end)
            i = end
            yield Token(c, start_line)
            continue
        for punctuator in PUNCTUATORS:
            if text.startswith(punctuator, i):
                yield Token(punctuator, line)
                i += len(punctuator)
                break
        else:
            yield Token(c, line)
            i += 1


def skip_quoted(text, i):
    """Returns the index just past the string or character literal whose quote is at `i`."""
    quote = text[i]
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote or text[i] == "\n":
            return i + 1
        i += 1
    return i


def skip_raw_string(text, i):
    """Returns the index just past the raw string R"delim(...)delim" whose quote is at `i`."""
    open_paren = text.find("(", i)
    delimiter = text[i + 1:open_paren]
    end = text.find(")" + delimiter + '"', open_paren)
    return len(text) if end < 0 else end + len(delimiter) + 2


def strip_access_labels(segment):
    """Drops `public:` and the like from the front of a class member's declaration."""
    while len(segment) > 1 and segment[0].text in ACCESS and segment[1].text == ":":
        segment = segment[2:]
    return segment


def strip_prefixes(segment):
    """Drops access labels, attributes and template heads from the front of a declaration."""
    segment = strip_access_labels(segment)
    changed = True
    while changed and segment:
        changed = False
        if segment[0].text == "[" and len(segment) > 1 and segment[1].text == "[":
            depth = 0
            for index, token in enumerate(segment):
                depth += {"[": 1, "]": -1}.get(token.text, 0)
                if depth == 0:
                    segment = segment[index + 1:]
                    break
            else:
                segment = []
            changed = True
        elif segment[0].text == "template" and len(segment) > 1 and segment[1].text == "<":
            angles = parens = 0  # a `>` inside parentheses, (a > b), closes no template head
            for index, token in enumerate(segment[1:], 1):
                parens += {"(": 1, ")": -1}.get(token.text, 0)
                if parens == 0:
                    angles += {"<": 1, ">": -1}.get(token.text, 0)
                if angles == 0:
                    segment = segment[index + 1:]
                    break
            else:
                segment = []
            changed = True
    return segment


def top_level(segment):
    """Yields (index, token) for the tokens of `segment` outside parentheses and brackets.

    The outermost brackets themselves are yielded, so that a parameter list shows as `(` `)`.
    """
    depth = 0
    for index, token in enumerate(segment):
        if token.text in "([":
            depth += 1
            if depth == 1:
                yield index, token
        elif token.text in ")]":
            depth -= 1
            if depth == 0:
                yield index, token
        elif depth == 0:
            yield index, token


def function_name(segment):
    """Returns the declarator name before the parameter list of `segment`, or None."""
    depth = 0
    for index, token in enumerate(segment):
        if token.text == "(" and depth == 0 and index > 0:
            name_end = index
            # operator() and operator<< etc: the name runs back to the keyword `operator`.
            for back in range(index - 1, max(index - 4, -1), -1):
                if segment[back].text == "operator":
                    if segment[back + 1].text == "(":  # operator()(...)
                        name_end = index + 2
                    start = back
                    break
            else:
                previous = segment[index - 1].text
                if not IDENTIFIER.fullmatch(previous) or previous in NOT_A_NAME:
                    depth += 1
                    continue
                start = index - 1
            if start >= 1 and segment[start - 1].text == "~":
                start -= 1
            while start >= 2 and segment[start - 1].text == "::":
                start -= 2
            return "".join(token.text for token in segment[start:name_end])
        if token.text in "([":
            depth += 1
        elif token.text in ")]":
            depth -= 1
    return None


def classify(segment):
    """Says what a `{` that follows `segment` at namespace or class scope opens.

    Returns ("scope", None) for a namespace, class or linkage block, whose `{`s may open functions;
    ("function", (name, first_line)) for a function body; ("other", None) otherwise (initializers,
    enums, brace-initialised members).
    """
    declaration = strip_access_labels(segment)
    segment = strip_prefixes(declaration)
    if not segment:
        return "other", None
    first = segment[0].text
    second = segment[1].text if len(segment) > 1 else ""
    if "namespace" in (first, second) or (first == "extern" and len(segment) <= 2):
        return "scope", None
    if first == "enum":
        return "other", None
    if first in CLASS_KEYS or (first == "typedef" and second in CLASS_KEYS):
        # A class head ends in its name, template arguments or bases; `struct S* F() const {`
        # ends in a parameter list (and qualifiers), and `class ATTR("x") Name` has one earlier.
        tail = [token.text for _, token in top_level(segment)]
        while tail and tail[-1] in QUALIFIERS:
            tail.pop()
        if not tail or tail[-1] != ")":
            return "scope", None
    texts = [token.text for _, token in top_level(segment)]
    for index, text in enumerate(texts):
        if text == "=" and (index == 0 or texts[index - 1] != "operator"):
            return "other", None
    name = function_name(segment)
    if name is None:
        return "other", None
    # The signature starts with its template head, if any.
    return "function", (name, declaration[0].line)


def in_constructor_initializers(segment):
    """True when `segment` ends inside a constructor's member initializer list, before an init."""
    segment = strip_prefixes(segment)
    if not segment or segment[0].text in CLASS_KEYS:  # `struct S : Base<decltype(x)> {`
        return False
    if not any(token.text == ":" for _, token in top_level(segment)):
        return False
    if not any(token.text == "(" for token in segment):
        return False
    # After `) :` comes `member(...)`, `member{...}` or `Base<T>{...}`: a `{` right after an
    # identifier or a `>` opens one of those initializers; after `)` or `}` it opens the body.
    last = segment[-1].text
    return last == ">" or (IDENTIFIER.fullmatch(last) is not None and last not in QUALIFIERS)


def find_functions(text):
    """Returns [(name, first_line, last_line)] for the function definitions in `text`."""
    tokens = list(tokenize(text))
    functions = []
    # Each open scope: "scope" (namespace or class), "function", or "other".
    stack = []
    segment = []  # tokens since the last `;`, `{` or `}` at namespace or class scope
    for token in tokens:
        if stack and stack[-1][0] != "scope":
            # Inside a function body or an initializer: match braces and nothing else.
            if token.text == "{":
                stack.append(("other", None))
            elif token.text == "}":
                kind, info = stack.pop()
                if kind == "function":
                    functions.append((info[0], info[1], token.line))
                    segment = []
                elif kind == "init" and stack and stack[-1][0] == "scope":
                    segment.append(Token("}", token.line))
            continue
        if token.text == "{":
            if in_constructor_initializers(segment):
                stack.append(("init", None))
            else:
                kind, info = classify(segment)
                stack.append((kind, info))
                segment = []
        elif token.text == "}":
            if stack:
                stack.pop()
            segment = []
        elif token.text == ";":
            segment = []
        else:
            segment.append(token)
    if stack:
        raise ValueError(f"unbalanced braces: {len(stack)} scope(s) open at the end")
    return functions


def is_library(path):
    relative = path.relative_to(SOURCE_ROOT)
    if relative.parts[0] == "testing":
        return False
    name = path.name
    return not (name.endswith("_test.cc") or "_test_util." in name or ".pb." in name)


def measure(paths):
    """Returns [(length, path, first_line, name)] for every function in `paths`."""
    results = []
    for path in paths:
        try:
            functions = find_functions(path.read_text())
        except ValueError as error:
            raise SystemExit(f"{path}: {error}")
        for name, first, last in functions:
            results.append((last - first + 1, path, first, name))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--over", type=int, help="list every function over this many lines")
    parser.add_argument("files", nargs="*", type=pathlib.Path,
                        help="measure these files instead of the library")
    args = parser.parse_args()
    if args.files:
        paths = [path.resolve() for path in args.files]
    else:
        paths = sorted(path for path in SOURCE_ROOT.rglob("*")
                       if path.suffix in (".h", ".cc") and is_library(path))
    results = sorted(measure(paths), key=lambda result: (-result[0], str(result[1]), result[2]))
    limit = SOFT_LIMIT if args.over is None else args.over
    for length, path, first, name in results:
        if length > limit:
            try:
                shown = path.relative_to(ROOT)
            except ValueError:
                shown = path
            print(f"{shown}:{first}: {name}: {length} lines")
    if args.over is not None:
        return 0
    over_soft = sum(1 for result in results if result[0] > SOFT_LIMIT)
    over_hard = sum(1 for result in results if result[0] > HARD_LIMIT)
    print(f"{len(results)} functions; {over_hard} over {HARD_LIMIT} lines (allowed 0), "
          f"{over_soft} over {SOFT_LIMIT} (allowed {MAX_OVER_SOFT})")
    return 1 if over_hard or over_soft > MAX_OVER_SOFT else 0


if __name__ == "__main__":
    sys.exit(main())
