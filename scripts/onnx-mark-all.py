#!/usr/bin/python3
"""Marks every node output of a model's main graph as a graph output.

    /usr/bin/python3 scripts/onnx-mark-all.py IN.onnx OUT.onnx

Used by scripts/ort-run.js --all, since onnxruntime-node cannot add outputs itself. The
added outputs carry a name only (no type): ONNX Runtime takes their types from its own
inference, so a wrong or symbolic shape in the model cannot leak into what it reports.
Existing outputs stay first and in order; the added ones follow in node order. Tensors of
subgraphs (If/Loop bodies) are not reachable from the main graph and are left alone.
Debian's python3-onnx is needed: run it with /usr/bin/python3.
"""
import os
import sys

import onnx


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: onnx-mark-all.py IN.onnx OUT.onnx\n")
        return 2
    src, dst = argv[1], argv[2]
    # Weights stay where they are: external data is resolved relative to the source folder.
    model = onnx.load(src, load_external_data=False)
    graph = model.graph
    have = {o.name for o in graph.output}
    added = 0
    for node in graph.node:
        for name in node.output:
            if name and name not in have:
                graph.output.add().name = name
                have.add(name)
                added += 1
    uses_external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in graph.initializer)
    if uses_external and os.path.dirname(os.path.abspath(src)) != os.path.dirname(os.path.abspath(dst)):
        sys.stderr.write("onnx-mark-all: %s keeps weights in external files: write OUT next to it\n" % src)
        return 1
    data = model.SerializeToString()
    with open(dst, "wb") as f:
        f.write(data)
    print("onnx-mark-all: %d outputs added" % added)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
