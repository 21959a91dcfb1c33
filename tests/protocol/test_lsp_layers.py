"""lsp/ in layers: a file calls only files below it (lsp_impl.h, "Layers").

Read from the built objects (nm): every symbol an lsp/ object uses and
another lsp/ object defines is one call edge between the two files. Each
edge must point down the table below. Calls through a table of hooks (the
server dispatching to the feature, a job's done callback) are not link
edges and are the one way up, by design. A file not in the table fails the
test, so that a new file is placed on purpose.

Before issue 44 nine files called each other in a circle (completer, index,
inline, jobs, model_slot, prompt, remote, server, settings): settings.c
started loads, indexes and clients, inline.c and remote.c freed each
other's arguments, and the feature called server.c for its accessors while
server.c named the feature."""
import glob
import os
import subprocess
import sys

# Bottom to top. Files on one rank do not call each other.
LAYERS = [
    # the daemon's parts
    ["position", "framing", "worker", "reaper"],
    ["document", "rpc"],
    ["core"],                         # the server as its parts see it
    ["jobs", "progress"],
    ["sync", "test_hooks",            # the core's own handlers
     "settings", "cache", "shape"],   # the completion feature's bottom
    ["model_slot"],
    ["index"],
    ["prompt"],
    ["remote"],
    ["inline", "actions"],
    ["completer"],                    # the feature's front
    ["server"],                       # lifecycle and dispatch
    ["stdio"],                        # the front door
]
RANK = {f: i for i, row in enumerate(LAYERS) for f in row}


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def edges(objdir):
    """{(caller, callee): [symbols]} between the files of objdir."""
    files = {}
    for obj in glob.glob(os.path.join(objdir, "*.c.o")):
        files[os.path.basename(obj)[:-len(".c.o")]] = symbols(obj)
    owner = {s: f for f, (d, _) in files.items() for s in d}
    out = {}
    for f, (_, used) in files.items():
        for s in used:
            g = owner.get(s)
            if g and g != f:
                out.setdefault((f, g), []).append(s)
    return files, out


def violations(files, found):
    bad = ["%s.c is not in the layer table (tests/protocol/test_lsp_layers.py)" % f
           for f in sorted(files) if f not in RANK]
    for (f, g), syms in sorted(found.items()):
        if f in RANK and g in RANK and RANK[g] >= RANK[f]:
            bad.append("%s.c calls up into %s.c: %s" % (f, g, ", ".join(sorted(syms))))
    return bad


def main():
    build = os.environ.get("SCULPT_BUILD_DIR")
    if not build:
        sys.exit("FAIL: SCULPT_BUILD_DIR is not set")
    objdir = os.path.join(build, "lsp", "CMakeFiles", "sc_lsp.dir")
    if not glob.glob(os.path.join(objdir, "*.c.o")):
        sys.exit("FAIL: no lsp/ objects under " + objdir)
    files, found = edges(objdir)
    # The checker itself: an upward edge planted here must be flagged.
    planted = dict(found)
    planted[("settings", "inline")] = ["sc_cpl__handle_inline"]
    if not any("settings.c calls up into inline.c" in v for v in violations(files, planted)):
        sys.exit("FAIL: the checker misses an upward call")
    if len(found) < 40:
        sys.exit("FAIL: only %d call edges between lsp/ files; nm read them wrong?" % len(found))
    bad = violations(files, found)
    for line in bad:
        print("FAIL " + line)
    if bad:
        sys.exit(1)
    print("ok   %d files, %d call edges, all pointing down %d layers" %
          (len(files), len(found), len(LAYERS)))


main()
