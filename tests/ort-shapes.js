// Shape oracle for tests/check-shape.c: runs ONNX Runtime on a model with every node
// output marked as a graph output and prints one line per tensor: `name dtype dims`
// (dims as 1x3x48x320, `scalar` for rank 0), in the order ONNX Runtime lists them.
//
// usage: node ort-shapes.js MODEL NAME:DIMS[,NAME:DIMS...] [--seed N]
//
// ONNX Runtime cannot list intermediate tensors itself, so tests/mark-all-outputs.py
// (Python + onnx) writes the marked copy into a temporary folder first. Inputs are seeded
// pseudo-random values so that runs are reproducible.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
// onnxruntime-node lives in the repository's scripts/node_modules; NODE_PATH may point elsewhere
function loadOrt() {
  try {
    return require(require('path').join(__dirname, '..', 'scripts', 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    return require('onnxruntime-node');
  }
}
const ort = loadOrt();

function usage(msg) {
  process.stderr.write(`ort-shapes: ${msg}\nusage: node ort-shapes.js MODEL NAME:DIMS[,...] [--seed N]\n`);
  process.exit(2);
}

function parseShapes(spec) {
  const shapes = {};
  for (const part of spec.split(',').filter((p) => p.length)) {
    const colon = part.lastIndexOf(':');
    if (colon <= 0) usage(`bad input shape '${part}'`);
    const dims = part.slice(colon + 1).split('x').filter((d) => d.length).map(Number);
    if (dims.some((d) => !Number.isInteger(d) || d < 0)) usage(`bad dimensions in '${part}'`);
    shapes[part.slice(0, colon)] = dims;
  }
  return shapes;
}

// mulberry32: small, seedable, good enough for test inputs
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function makeInput(type, dims, next) {
  const n = dims.reduce((a, b) => a * b, 1);
  switch (type) {
    case 'float32': return new ort.Tensor(type, Float32Array.from({ length: n }, () => next() * 2 - 1), dims);
    case 'float64': return new ort.Tensor(type, Float64Array.from({ length: n }, () => next() * 2 - 1), dims);
    case 'int32': return new ort.Tensor(type, Int32Array.from({ length: n }, () => Math.floor(next() * 8)), dims);
    case 'int64': return new ort.Tensor(type, BigInt64Array.from({ length: n }, () => BigInt(Math.floor(next() * 8))), dims);
    case 'uint8': return new ort.Tensor(type, Uint8Array.from({ length: n }, () => Math.floor(next() * 256)), dims);
    case 'int8': return new ort.Tensor(type, Int8Array.from({ length: n }, () => Math.floor(next() * 256) - 128), dims);
    case 'bool': return new ort.Tensor(type, Uint8Array.from({ length: n }, () => (next() < 0.5 ? 1 : 0)), dims);
    default: throw new Error(`input type ${type} is not supported by this script`);
  }
  return null;
}

async function main() {
  const args = process.argv.slice(2);
  let seed = 1;
  const pos = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--seed') seed = Number(args[++i]);
    else pos.push(args[i]);
  }
  if (pos.length !== 2) usage('expected MODEL and input shapes');
  const shapes = parseShapes(pos[1]);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ort-shapes-'));
  try {
    const marked = path.join(tmp, 'marked.onnx');
    execFileSync('/usr/bin/python3', [path.join(__dirname, 'mark-all-outputs.py'), pos[0], marked], { stdio: 'inherit' });
    const session = await ort.InferenceSession.create(marked, { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
    const next = rng(seed);
    const feeds = {};
    session.inputNames.forEach((name, i) => {
      if (!(name in shapes)) usage(`no shape given for input '${name}'`);
      const meta = session.inputMetadata ? session.inputMetadata[i] : null;
      feeds[name] = makeInput(meta && meta.type ? meta.type : 'float32', shapes[name], next);
    });
    const out = await session.run(feeds);
    const lines = [];
    for (const name of session.outputNames) {
      const t = out[name];
      const dims = t.dims.length ? t.dims.join('x') : 'scalar';
      lines.push(`${name} ${t.type} ${dims}`);
    }
    process.stdout.write(lines.join('\n') + '\n');
    await session.release();
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

module.exports = { loadOrt, parseShapes, rng, makeInput };

if (require.main === module) {
  main().catch((e) => {
    process.stderr.write(`ort-shapes: ${e && e.message ? e.message : e}\n`);
    process.exit(1);
  });
}
