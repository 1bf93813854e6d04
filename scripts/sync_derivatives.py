#!/usr/bin/env python3
"""Rewrites crates/ratten-aten/derivatives.yaml: PyTorch's derivatives.yaml entries
(../shared/pytorch/derivatives.yaml, or the path given) for every operator overload
native_functions.yaml declares, copied verbatim in PyTorch's order, under the file's header.
Run it after declaring operators; the test derivatives_match_pytorch checks the result."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = ROOT / "crates/ratten-aten/derivatives.yaml"
NATIVE = ROOT / "crates/ratten-aten/native_functions.yaml"
THEIRS = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared/pytorch/derivatives.yaml"


def op_name(sig: str) -> str:
    return sig.split("(", 1)[0].strip()


def declared() -> set:
    names = set()
    for line in NATIVE.read_text().splitlines():
        m = re.match(r"^- func:\s*(\S[^(]*)\(", line)
        if m:
            names.add(m.group(1).strip())
    return names


def blocks(text: str):
    """Each `- name:` entry with its body (up to the next entry or top-level comment)."""
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith("- name:"):
            if cur:
                out.append(cur)
            cur = [line]
        elif cur is not None and (line.startswith(" ") or line == ""):
            cur.append(line)
        elif cur is not None:
            out.append(cur)
            cur = None
    if cur:
        out.append(cur)
    return out


def main():
    ours = OURS.read_text().splitlines()
    header = []
    for line in ours:
        if line.startswith("- name:"):
            break
        header.append(line)
    names = declared()
    kept = []
    for b in blocks(THEIRS.read_text()):
        if op_name(b[0][len("- name:"):]) in names:
            while b and b[-1] == "":
                b.pop()
            kept.append("\n".join(b))
    while header and header[-1] == "":
        header.pop()
    OURS.write_text("\n".join(header) + "\n\n" + "\n\n".join(kept) + "\n")
    print(f"{len(kept)} entries")


if __name__ == "__main__":
    main()
