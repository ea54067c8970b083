"""2. The mutant ctests of a build dir, matched with the declarations (and the ports' bugs)."""

import json
import os
import re
import shutil
import subprocess

from .common import die, ids_in, read_lines, rel, uniq
from .manifest import Switch


class MutantTest:
    def __init__(self, name, command, properties, registered_at, backtrace):
        self.name = name
        self.command = command or []
        self.properties = properties
        self.registered_at = registered_at  # outermost CMake call site, "file:line"
        self.backtrace = backtrace
        self.executable = None
        self.built = None
        self.switch = None
        self.mapped_by = None
        self.candidates = []
        self.status = None   # passed (the mutant is caught) | failed | not run | not built
        self.time = None
        self.message = ""

    @property
    def mutant_part(self):
        return self.name.split(".mutant.", 1)[1] if ".mutant." in self.name else self.name

    @property
    def area_part(self):
        head = self.name.split(".mutant.", 1)[0]
        return head.split(".")[-1] if "." in head else ""


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, **kw)


CMAKE_ARG_RE = re.compile(r'"((?:[^"\\]|\\.)*)"|(\[=*\[.*?\]=*\])|([^\s()"]+)')


def parse_ctest_files(build_dir):
    """add_test commands and backtraces straight from the CTestTestfile.cmake files (the
    JSON listing leaves out `command` when the executable does not exist yet)."""
    out = {}
    for dirpath, _, files in os.walk(build_dir):
        if "CTestTestfile.cmake" not in files:
            continue
        for line in read_lines(os.path.join(dirpath, "CTestTestfile.cmake")):
            m = re.match(r"\s*add_test\(\s*(\[=*\[(.*?)\]=*\]|\S+)\s+(.*)\)\s*$", line)
            if m:
                name = m.group(2) if m.group(2) is not None else m.group(1)
                args = []
                for a in CMAKE_ARG_RE.finditer(m.group(3)):
                    if a.group(1) is not None:
                        args.append(re.sub(r"\\(.)", r"\1", a.group(1)))
                    elif a.group(2) is not None:
                        args.append(re.sub(r"^\[=*\[|\]=*\]$", "", a.group(2)))
                    else:
                        args.append(a.group(3))
                out.setdefault(name, {})["command"] = args
                continue
            m = re.match(r"\s*set_tests_properties\(\s*\[=*\[(.*?)\]=*\]\s+PROPERTIES.*"
                         r'_BACKTRACE_TRIPLES\s+"([^"]*)"', line)
            if m:
                parts = m.group(2).split(";")
                triples = [(parts[k], parts[k + 1], parts[k + 2])
                           for k in range(0, len(parts) - 2, 3)]
                out.setdefault(m.group(1), {})["triples"] = triples
    return out


def list_mutant_tests(build_dir, root):
    try:
        p = run(["ctest", "--test-dir", build_dir, "-N", "--show-only=json-v1"])
    except FileNotFoundError:
        die("ctest not found on PATH")
    if p.returncode != 0:
        die("`ctest -N` failed in %s:\n%s" % (build_dir, p.stderr.strip()))
    try:
        data = json.loads(p.stdout)
    except ValueError:
        die("could not read ctest's JSON listing of %s" % build_dir)
    graph = data.get("backtraceGraph", {})
    files, nodes, cmds = graph.get("files", []), graph.get("nodes", []), graph.get("commands", [])
    fallback = None
    tests = []
    for t in data.get("tests", []):
        name = t.get("name", "")
        if ".mutant." not in name:
            continue
        props = {p["name"]: p.get("value") for p in t.get("properties", [])}
        frames = []
        n = t.get("backtrace")
        while n is not None and 0 <= n < len(nodes):
            node = nodes[n]
            if "line" in node:
                frames.append({"file": rel(files[node["file"]], root), "line": node["line"],
                               "command": cmds[node["command"]] if "command" in node else ""})
            n = node.get("parent")
        command = t.get("command")
        if not command:
            if fallback is None:
                fallback = parse_ctest_files(build_dir)
            entry = fallback.get(name, {})
            command = entry.get("command")
            if not frames and entry.get("triples"):
                frames = [{"file": rel(f, root), "line": int(l), "command": c}
                          for f, l, c in entry["triples"] if l.isdigit() and int(l) > 0]
        reg = "%s:%d" % (frames[-1]["file"], frames[-1]["line"]) if frames else None
        tests.append(MutantTest(name, command, props, reg, frames))
    return tests


LAUNCHERS = re.compile(r"^(cmake|ctest|sh|bash|env|python[0-9.]*|setarch|valgrind)$")


def find_executable(test, build_dir):
    cmd = test.command
    if not cmd:
        return None
    if not LAUNCHERS.match(os.path.basename(cmd[0])):
        if not os.path.isabs(cmd[0]) and os.sep not in cmd[0]:
            return shutil.which(cmd[0]) or cmd[0]
        return cmd[0]
    # A driver script: the tested binary is an argument (-DEXE=<path>, or any path
    # into the build tree).
    build_abs = os.path.abspath(build_dir)
    candidates = []
    for a in cmd[1:]:
        v = a.split("=", 1)[1] if a.startswith("-D") and "=" in a else a
        if os.path.isabs(v) and os.path.abspath(v).startswith(build_abs + os.sep):
            candidates.append((0 if re.match(r"-D(EXE|EXECUTABLE|BINARY|TEST_EXE)=", a) else 1, v))
    return sorted(candidates)[0][1] if candidates else None


def map_tests(tests, switches, build_dir):
    """Match the mutant ctests of the build dir with the declarations, by name."""
    by_test = {}
    for sw in switches.values():
        for name in sw.declared:
            by_test[name] = sw.name
    for t in tests:
        exe = find_executable(t, build_dir)
        t.executable = exe
        t.built = bool(exe) and os.path.isfile(exe) and os.access(exe, os.X_OK)
        name = by_test.get(t.name)
        if name:
            t.switch, t.mapped_by = name, "declaration"
            sw = switches[name]
            if sw.error:
                t.built, t.executable = True, None  # it runs, and fails with the reason
            sw.tests.append(t)
    present = {t.name for t in tests}
    for sw in switches.values():
        sw.missing = [n for n in sw.declared if n not in present]


PORT_TEST_RE = re.compile(r"^conformance\.ports\.(\w+)\.mutant\.([\w-]+)$")


def port_mutants(root, tests, switches):
    """A port's planted bug (checks/conformance/ports/<port>/lib/bugs.mjs): the ctest
    conformance.ports.<port>.mutant.<bug> passes only if the oracle reports the bug's
    rule. It is a mutant of the port, not of turnstile: listed under the contract
    `port` (not counted toward the per-contract target), its rule IDs read from the
    `//   <bug> ... [ID]` line of the bugs file."""
    for t in tests:
        m = PORT_TEST_RE.match(t.name)
        if t.switch or not m:
            continue
        port, bug = m.groups()
        bugs_file = os.path.join(root, "checks", "conformance", "ports", port, "lib", "bugs.mjs")
        if not os.path.isfile(bugs_file):
            continue
        lines = read_lines(bugs_file)
        where = next((i for i, line in enumerate(lines)
                      if re.match(r"^\s*//\s+" + re.escape(bug) + r"\s", line)), None)
        if where is None:
            continue
        name = ("PORT_%s_%s" % (port, bug)).upper().replace("-", "_")
        sw = switches.setdefault(name, Switch(name))
        sw.missing = []
        sw.locations.append({"file": rel(bugs_file, root), "line": where + 1})
        # the bug's description may continue on the next comment lines
        end = where + 1
        while end < len(lines) and re.match(r"^\s*//\s{6,}\S", lines[end]):
            end += 1  # an indented continuation line, not the next bug
        text = " ".join(lines[k].strip(" /") for k in range(where, end))
        sw.breaks, sw.breaks_from = uniq(ids_in(text)), "port"
        sw.description = lines[where].strip(" /")
        sw.contract, sw.contract_from = "port", "port"
        t.switch, t.mapped_by, t.candidates = name, "port", []
        sw.tests.append(t)
