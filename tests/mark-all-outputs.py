#!/usr/bin/python3
"""Copies an ONNX model, listing every node output of the main graph as a graph output.

ONNX Runtime only returns graph outputs, so the shape oracle (tests/ort-shapes.js) and the
comparison scripts mark every intermediate tensor this way. The new outputs carry a name
and nothing else: ONNX Runtime infers their type itself, and giving them a type here would
risk imposing one it then checks against.

usage: mark-all-outputs.py IN.onnx OUT.onnx
"""
import sys

import onnx


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: mark-all-outputs.py IN.onnx OUT.onnx\n")
        return 2
    model = onnx.load(sys.argv[1])
    graph = model.graph
    listed = {o.name for o in graph.output}
    for node in graph.node:
        for name in node.output:
            if name and name not in listed:
                graph.output.append(onnx.ValueInfoProto(name=name))
                listed.add(name)
    onnx.save(model, sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
