"""checks/lint/astdump.py: clang-query's text AST dumps as node trees.

turnstile-lint asks clang-query-14 to dump every function defined in the main
file (`set output dump`), then reads those dumps here. A dump line is one node:
tree-drawing prefix, node kind, address, source range, then node details with
types in single quotes. Locations are printed relative to the previous one
(`col:N` on the same line, `line:L:C` in the same file, `FILE:L:C` otherwise),
in print order, and each match's dump starts afresh; `parse_dumps` resolves
them. Types in quotes may hold locations (`'(lambda at a.cpp:9:21)'`): they are
not locations of the dump and are skipped.
"""

import re

NODE_RE = re.compile(r"^((?:[| ] )*)(?:[|`]-)?(.*)$")
ADDR_RE = re.compile(r"^(\S+) (0x[0-9a-f]+)\b")
QUOTED_RE = re.compile(r"'[^']*'")
LOC_RE = re.compile(r"(line):(\d+):(\d+)|(col):(\d+)|(?:Spelling=)?([^\s<>,:']+):(\d+):(\d+)")
MEMBER_RE = re.compile(r"'<bound member function type>' (?:\.|->)(.+?) (0x[0-9a-f]+)")
REF_RE = re.compile(r"\b(?:Var|ParmVar|Function|CXXMethod|Field) (0x[0-9a-f]+) '([^']*)'")


class Node:
    __slots__ = ("kind", "addr", "text", "loc", "children", "parent", "depth")

    def __init__(self, kind, addr, text, loc, depth):
        self.kind, self.addr, self.text, self.loc, self.depth = kind, addr, text, loc, depth
        self.children, self.parent = [], None

    def walk(self, skip=None):
        """This node and its descendants, depth first, in dump order."""
        stack = [self]
        while stack:
            n = stack.pop()
            yield n
            kids = n.children if skip is None else [c for c in n.children if not skip(n, c)]
            stack.extend(reversed(kids))

    def ancestors(self):
        p = self.parent
        while p is not None:
            yield p
            p = p.parent

    def types(self):
        """The quoted types of this node (written, then canonical)."""
        return [q[1:-1] for q in QUOTED_RE.findall(self.text)]

    def member(self):
        """For a CXXMemberCallExpr: (member name, MemberExpr node) or (None, None)."""
        if self.kind != "CXXMemberCallExpr" or not self.children:
            return None, None
        m = self.children[0]
        if m.kind != "MemberExpr":
            return None, None
        mm = MEMBER_RE.search(m.text)
        return (mm.group(1), m) if mm else (None, None)

    def __repr__(self):
        return f"{self.kind}@{self.loc}"


def strip_implicit(n):
    """Skip the implicit wrappers around an expression."""
    while n is not None and n.kind in ("ImplicitCastExpr", "ParenExpr", "MaterializeTemporaryExpr",
                                       "CXXBindTemporaryExpr", "ExprWithCleanups", "CXXFunctionalCastExpr",
                                       "CXXStaticCastExpr") and n.children:
        n = n.children[0]
    return n


def referenced(n):
    """(decl address, name) of the DeclRefExpr/MemberExpr `n` refers to, else None."""
    n = strip_implicit(n)
    if n is None:
        return None
    if n.kind == "DeclRefExpr":
        m = REF_RE.search(n.text)
        return (m.group(1), m.group(2)) if m else None
    if n.kind == "MemberExpr":
        m = re.search(r"(?:\.|->)(\w+) (0x[0-9a-f]+)", n.text)
        return (m.group(2), m.group(1)) if m else None
    return None


def _resolve(text, state):
    """Updates `state` [file, line] with the locations on one line; returns the
    first one (the node's begin) as (file, line, col), or None."""
    first = None
    for m in LOC_RE.finditer(QUOTED_RE.sub("''", text)):
        if m.group(1):
            state[1] = int(m.group(2))
            col = int(m.group(3))
        elif m.group(4):
            col = int(m.group(5))
        else:
            state[0], state[1] = m.group(6), int(m.group(7))
            col = int(m.group(8))
        if first is None and state[0] is not None:
            first = (state[0], state[1], col)
    return first


def parse_dumps(output):
    """The root nodes of every `Binding for "root":` dump in clang-query output."""
    roots = []
    lines = output.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith('Binding for "root":'):
            i += 1
            state = [None, 0]
            stack = []
            while i < len(lines) and lines[i].strip():
                line = lines[i]
                m = NODE_RE.match(line)
                prefix, body = m.group(1), m.group(2)
                connector = line[len(prefix):len(prefix) + 2] in ("|-", "`-")
                depth = len(prefix) // 2 + 1 if connector else 0
                am = ADDR_RE.match(body)
                kind, addr = (am.group(1), am.group(2)) if am else (body.split(" ")[0], None)
                range_start = body.find(" <")
                loc = _resolve(body[range_start:], state) if range_start >= 0 else None
                node = Node(kind, addr, body, loc, depth)
                while stack and stack[-1].depth >= depth:
                    stack.pop()
                if stack:
                    node.parent = stack[-1]
                    stack[-1].children.append(node)
                elif depth == 0:
                    roots.append(node)
                stack.append(node)
                i += 1
        i += 1
    return roots
