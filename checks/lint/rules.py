"""checks/lint/rules.py: turnstile-lint's rules over parsed AST dumps.

Each rule is restated with its ID in spec/lint.md. A finding is
(file, line, col, rule ID, message). The rules see one function defined in the
main file at a time (a whole top-level definition, its lambdas included), plus
the table of every such function (for detach(s, worker()) with worker defined
in the same file).
"""

from astdump import strip_implicit, referenced

READS = ("get", "try_get", "or_else", "is_bound")
GUARDS = ("try_get", "or_else", "is_bound")


def _is_fiber_local(n):
    return any("turnstile::FiberLocal<" in t or t.startswith("FiberLocal<") or "const FiberLocal<" in t
               for t in n.types())


def _of_type(n, name):
    return any(name in t for t in n.types())


def fl_call(n):
    """For a FiberLocal member call: (method, key id, key name), else None."""
    name, member = n.member()
    if name not in READS + ("where",) or not member.children:
        return None
    base = member.children[0]
    if not _is_fiber_local(base) and not _is_fiber_local(strip_implicit(base)):
        return None
    ref = referenced(base)
    key = ref if ref else (base.text, "<expression>")
    return name, key[0], key[1]


def _lambda_skip(parent, child):
    """While walking an operand: skip a lambda's class and body (they are not evaluated there)."""
    return parent.kind == "LambdaExpr" and child.kind in ("CXXRecordDecl", "CompoundStmt",
                                                           "CoroutineBodyStmt")


def _inside_where_of(n, key):
    for a in n.ancestors():
        if a.kind == "CXXMemberCallExpr":
            c = fl_call(a)
            if c and c[0] == "where" and c[1] == key:
                return True
    return False


def _inside_context_run(n):
    for a in n.ancestors():
        if a.kind == "CXXMemberCallExpr":
            name, member = a.member()
            if name == "run" and member.children and _of_type(member.children[0], "FiberContext"):
                return True
    return False


def _inside_unbound_catch(n):
    """`n` is in the try block of a try statement that catches UnboundFiberLocal (or ...)."""
    child = n
    for a in n.ancestors():
        if a.kind == "CXXTryStmt" and a.children and a.children[0] is child:
            for h in a.children[1:]:
                if h.kind == "CXXCatchStmt" and (not h.children or h.children[0].kind != "VarDecl"
                                                 or "UnboundFiberLocal" in h.children[0].text
                                                 or "logic_error" in h.children[0].text
                                                 or "std::exception" in h.children[0].text):
                    return True
        child = a
    return False


def _body_scope(n):
    """The address of the body of the function or lambda `n` is in (the same
    body dumped twice has one address)."""
    child = n
    for a in n.ancestors():
        if a.kind in ("CoroutineBodyStmt",) or (child.kind == "CompoundStmt" and a.kind in (
                "FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl", "CXXDestructorDecl", "LambdaExpr")):
            return child.addr
        child = a
    return None


def rule_unbound_get(root, ctx):
    """[LINT-1.1] get() with no guard on the same key in the same definition."""
    guarded = set()
    gets = []
    for n in root.walk():
        if n.kind != "CXXMemberCallExpr":
            continue
        c = fl_call(n)
        if not c:
            continue
        if c[0] in GUARDS:
            guarded.add(c[1])
        elif c[0] == "get":
            gets.append((n, c))
    for n, (_, key, name) in gets:
        if key in guarded or _inside_where_of(n, key) or _inside_unbound_catch(n):
            continue
        yield n.loc, "LINT-1.1", (f"(advisory) '{name}.get()' may read an unbound key and throw "
                                  f"UnboundFiberLocal: guard it with is_bound(), or read with "
                                  f"try_get()/or_else() [FL-8.2]")


def _task_bodies(arg, ctx):
    """The bodies of the coroutine that a detach argument starts: an
    immediately invoked lambda, or a function defined in this file."""
    for n in arg.walk(skip=lambda p, c: p.kind == "LambdaExpr" and c.kind == "CXXRecordDecl"):
        if n.kind == "LambdaExpr" and n.children:
            yield n.children[-1], None
        elif n.kind == "DeclRefExpr" and " Function 0x" in n.text:
            ref = referenced(n)
            if ref and ref[0] in ctx["functions"]:
                yield ctx["functions"][ref[0]], ref[1]


def _borrowed_vars(root):
    """Variables of reference or pointer type initialised from a key's get()/try_get()."""
    out = {}
    for n in root.walk():
        if n.kind == "VarDecl" and n.children:
            types = n.types()
            if not types or not ("&" in types[0] or "*" in types[0]):
                continue
            for d in n.children[-1].walk():
                c = fl_call(d) if d.kind == "CXXMemberCallExpr" else None
                if c and c[0] in ("get", "try_get"):
                    out[n.addr] = (n.text.split("'")[0].split()[-1], c[2])
                    break
    return out


def rule_handoff(root, ctx):
    """[LINT-2.1] a key read in a detached task outside ctx.run; [LINT-2.3] a reference to a
    binding carried into detach or a Channel send."""
    borrowed = _borrowed_vars(root)
    for n in root.walk():
        # detach(s, task)
        if n.kind == "CallExpr" and n.children and "'detach'" in strip_implicit(n.children[0]).text \
                and any("turnstile::Scheduler" in t or "Task<" in t for t in strip_implicit(n.children[0]).types()):
            for body, fname in _task_bodies(n.children[-1], ctx):
                via = f" (through {fname}())" if fname else ""
                for d in body.walk():
                    c = fl_call(d) if d.kind == "CXXMemberCallExpr" else None
                    if c and c[0] == "get" and not _inside_context_run(d) and not _inside_where_of(d, c[1]) \
                            and not _inside_unbound_catch(d):
                        yield d.loc, "LINT-2.1", (
                            f"'{c[2]}.get()' in a task started by detach at line {n.loc[1]}{via}: detach "
                            f"carries no bindings [FL-3.4]; take FiberContext::capture() before detach "
                            f"and read inside ctx.run(...) [FL-3.5]")
                    ref = referenced(d) if d.kind == "DeclRefExpr" else None
                    if ref and ref[0] in borrowed:
                        yield d.loc, "LINT-2.3", (
                            f"'{ref[1]}' borrows the binding of '{borrowed[ref[0]][1]}' into a task started "
                            f"by detach at line {n.loc[1]}: the reference is valid only while the binding is "
                            f"in effect [FL-5.6]; copy the value, or carry FiberContext::capture() [FL-3.5]")
        if n.kind != "CXXMemberCallExpr":
            continue
        name, member = n.member()
        if not member or not member.children or not _of_type(member.children[0], "turnstile::Channel<"):
            continue
        if name in ("send", "try_send") and len(n.children) > 1:
            for d in n.children[1].walk(skip=_lambda_skip):
                c = fl_call(d) if d.kind == "CXXMemberCallExpr" else None
                ref = referenced(d) if d.kind == "DeclRefExpr" else None
                taken = c and (c[0] == "try_get" or (c[0] == "get" and d.parent is not None
                                                     and d.parent.kind == "UnaryOperator"
                                                     and "'&'" in d.parent.text))
                if taken or (ref and ref[0] in borrowed):
                    what = c[2] if c else borrowed[ref[0]][1]
                    yield d.loc, "LINT-2.3", (
                        f"a pointer or reference to the binding of '{what}' is sent on a Channel: it is "
                        f"valid only while the binding is in effect [FL-5.6]; send the value, or "
                        f"FiberContext::capture() in the item [FL-3.5]")


def rule_after_receive(root, ctx):
    """[LINT-2.2] get() after a Channel receive in the same body, outside ctx.run."""
    receives = []
    for n in root.walk():
        if n.kind == "CXXMemberCallExpr":
            name, member = n.member()
            if name == "receive" and member.children and _of_type(member.children[0], "turnstile::Channel<"):
                receives.append((_body_scope(n), n.loc))
    if not receives:
        return
    for n in root.walk():
        c = fl_call(n) if n.kind == "CXXMemberCallExpr" else None
        if not c or c[0] != "get":
            continue
        scope = _body_scope(n)
        before = [loc for s, loc in receives if s == scope and loc[:2] <= n.loc[:2]]
        if before and not _inside_context_run(n) and not _inside_where_of(n, c[1]) \
                and not _inside_unbound_catch(n):
            yield n.loc, "LINT-2.2", (
                f"'{c[2]}.get()' after a Channel receive at line {before[0][1]}: a Channel carries no "
                f"bindings [FL-3.4]; send FiberContext::capture() in the item and read inside "
                f"item.ctx.run(...) [FL-3.5]")


# The shapes GCC 12.2 destroys twice inside a co_await operand (measured: see README.md).
HAZARD_SHAPES = ("LambdaExpr", "InitListExpr")


def _spine(n):
    """The awaited object's own chain: wrappers, operator co_await, down to its producing call."""
    while True:
        if n.kind in ("MaterializeTemporaryExpr", "CXXBindTemporaryExpr", "ImplicitCastExpr", "ParenExpr",
                      "ExprWithCleanups") and n.children:
            yield n
            n = n.children[0]
        elif n.kind == "CXXOperatorCallExpr" and "'co_await'" in n.text and len(n.children) > 1:
            yield n
            n = n.children[-1]
        elif n.kind == "CXXMemberCallExpr" and n.member()[0] == "operator co_await":
            yield n
            n = n.member()[1].children[0]
        else:
            return


def rule_coawait_temporary(root, ctx):
    """[LINT-3.1] a co_await operand that materialises an aggregate or closure
    temporary with a non-trivial destructor (every such temporary with --strict)."""
    strict = ctx["strict"]
    for n in root.walk():
        if n.kind != "CoawaitExpr" or not n.children or "<dependent type>" in n.text:
            continue
        operand = n.children[0]
        spine = {id(s) for s in _spine(operand)}
        for d in operand.walk(skip=_lambda_skip):
            if d.kind != "CXXBindTemporaryExpr" or not d.children:
                continue
            inner = d.children[0]
            while inner.kind in ("ImplicitCastExpr", "ParenExpr") and inner.children:
                inner = inner.children[0]
            if inner.kind in HAZARD_SHAPES:
                what = "a lambda capturing by value" if inner.kind == "LambdaExpr" else "an aggregate built in place"
            elif strict and id(d) not in spine:
                what = "a temporary"
            else:
                continue
            t = d.types()[-1] if d.types() else "?"
            shown = "" if t.startswith("(lambda at") else f" ('{t}')"
            yield d.loc, "LINT-3.1", (
                f"co_await operand materialises {what}{shown} with a non-trivial destructor, which "
                f"GCC 12 destroys twice: build it in a named local first, then co_await")


RULES = {
    "LINT-1.1": rule_unbound_get,
    "LINT-2.1": rule_handoff,
    "LINT-2.2": rule_after_receive,
    "LINT-2.3": rule_handoff,
    "LINT-3.1": rule_coawait_temporary,
}
