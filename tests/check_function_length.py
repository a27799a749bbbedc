#!/usr/bin/env python3
"""Functions short enough to hold in one's head (issue 49's house rule).

  check_function_length.py SOURCE_DIR

No function (or member function, or kernel) longer than 200 lines in host/, io/ and
solvers/, or 300 in kernels/, counted from the line that opens its body to the line
that closes it. A function still over its limit is listed in KNOWN with the length it
had when the rule came in: it may shrink, never grow, and the list only shortens.

Functions are found by their shape: a line ending in '{' whose text before it closes a
parameter list ('...) {', '...) const {', '...) override {', a constructor's
initializer list), that is not a control statement, a lambda or a type; the body is
the braces it opens. Lambdas count as part of the function they are written in.
Exit 0 when every function fits; 1 with the offenders named otherwise.
"""
import os
import re
import sys

LIMITS = {"host": 200, "io": 200, "solvers": 200, "kernels": 300}
# path: (function, the lines it had when the rule came in)
KNOWN = {
    "kernels/qp_warp_kernels.cu": ("qp_admm_warp_kernel", 593),
}
EXTENSIONS = (".h", ".cc", ".cu", ".cuh")
CONTROL = re.compile(r"^\s*(\}\s*)?(if|for|while|switch|catch|else|do|try)\b")
TYPE = re.compile(r"^\s*(template\s*<.*>\s*)?(struct|class|union|enum|namespace|extern)\b")


def strip(line):
    """The line without comments and string or character literals (for brace counting)."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//", 1)[0]


def name_of(lines, i):
    """The name before the parameter list of the signature that ends on line i."""
    k = i
    while k > 0 and lines[k - 1].strip() and not lines[k - 1].rstrip().endswith((";", "}", "{", ":")) \
            and not lines[k - 1].lstrip().startswith("#"):
        k -= 1
    sig = " ".join(l.strip() for l in lines[k:i + 1])
    sig = re.sub(r"<[^<>()]*>", "", sig)  # template arguments
    for m in re.finditer(r"([~\w:]+)\s*\(", sig):
        if m.group(1) not in ("__launch_bounds__", "__attribute__", "alignas", "decltype", "__declspec"):
            return m.group(1)
    return "?"


def functions(path):
    """(name, first line, length) of each function defined in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [strip(l) for l in f.read().split("\n")]
    out, i, block = [], 0, False
    while i < len(lines):
        text = lines[i]
        if "/*" in text and "*/" not in text:
            block = True
        if block:
            block = "*/" not in text
            i += 1
            continue
        s = text.rstrip()
        opens = s.endswith("{") and not CONTROL.match(s) and not TYPE.match(s) and "[" not in s.split("(")[0]
        head = " ".join(l.strip() for l in lines[max(0, i - 4):i + 1])
        is_function = opens and re.search(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(final\s*)?(->\s*[\w:<>]+\s*)?\{$", s)
        is_function = is_function or (opens and re.search(r"\)\s*:\s*\w", head) and s.strip().endswith("{"))
        if is_function and not re.search(r"\]\s*\([^)]*\)\s*(mutable\s*)?(->\s*[\w:<>]+\s*)?\{$", s) \
                and not re.search(r"=\s*\[", s):
            depth, j = 0, i
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                if depth <= 0:
                    break
                j += 1
            out.append((name_of(lines, i), i + 1, j - i + 1))
            i = j + 1
            continue
        i += 1
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad = []
    for top, limit in LIMITS.items():
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                for fn, line, length in functions(path):
                    known = KNOWN.get(rel)
                    cap = known[1] if known and known[0] in fn else limit
                    if length > cap:
                        bad.append(f"{rel}:{line}: {fn} is {length} lines (at most {cap})")
    for b in bad:
        print(b)
    if bad:
        print(f"{len(bad)} function(s) too long: break them into named steps (issue 49)")
        return 1
    print("every function within its limit (host, io, solvers 200 lines; kernels 300)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
