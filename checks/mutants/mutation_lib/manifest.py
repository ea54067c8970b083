"""1. The manifest of a build dir: the declared mutants (checks/mutants/CMakeLists.txt)."""

import json
import os
import re

from .common import die, read_lines

MANIFEST = os.path.join("mutants", "manifest.json")


class Switch:
    """One mutant: a declaration of the manifest, or a port's planted bug."""
    def __init__(self, name):
        self.name = name                # the declared NAME, e.g. LANE_ACCEPT_AFTER_CLOSE
        self.short = name
        self.locations = []             # dicts: file, line (the patch, then the files it touches)
        self.breaks = []
        self.breaks_from = None         # declaration | port
        self.description = ""
        self.contract = None
        self.contract_from = None
        self.patch = None
        self.files = []
        self.library = False
        self.error = ""                 # why the patch did not apply at configure time
        self.declared = []              # ctest names declared to catch it
        self.tests = []                 # MutantTest

    @property
    def primary(self):
        return self.locations[0] if self.locations else {"file": "?", "line": 0}


def patch_description(path):
    """The `# mutant NAME (contract c): <text>` header line of a patch, without the prefix."""
    for line in read_lines(path):
        if not line.startswith("#"):
            break
        m = re.match(r"#\s*mutant\s+\S+\s*(\([^)]*\))?:\s*(.*)$", line)
        if m:
            return m.group(2).strip()
    return ""


def load_manifest(build_dir, root):
    path = os.path.join(build_dir, MANIFEST)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError:
        die("%s has no %s: configure it with this source tree (the mutants are declared in "
            "checks/mutants/CMakeLists.txt)" % (build_dir, MANIFEST))
    except ValueError as e:
        die("%s is not valid JSON: %s" % (path, e))
    switches = {}
    for m in data.get("mutants", []):
        sw = Switch(m["name"])
        sw.contract, sw.contract_from = m.get("contract"), "declaration"
        sw.breaks, sw.breaks_from = list(m.get("breaks", [])), "declaration"
        sw.patch = m.get("patch")
        sw.files = list(m.get("files", []))
        sw.library = bool(m.get("library"))
        sw.error = m.get("error") or ""
        sw.declared = [t["name"] for t in m.get("tests", [])]
        sw.locations = [{"file": sw.patch, "line": 1}] + [{"file": f, "line": 0} for f in sw.files]
        sw.description = patch_description(os.path.join(root, sw.patch)) if sw.patch else ""
        switches[sw.name] = sw
    return switches
