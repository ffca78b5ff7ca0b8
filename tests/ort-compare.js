// Runs two ONNX models (typically a model and its sanitized copy) with ONNX Runtime on the
// same seeded inputs and compares their graph outputs by name. Prints one line per output
// (`name max_abs <x>`) and a last line `max_abs <x>` over all of them. Exit 0 when every
// output of A exists in B with the same type and shape, 1 otherwise.
//
// usage: node ort-compare.js A.onnx B.onnx NAME:DIMS[,NAME:DIMS...] [--seed N]
'use strict';

const { loadOrt, parseShapes, rng, makeInput } = require('./ort-shapes.js');

const ort = loadOrt();

async function run(model, shapes, seed) {
  const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
  const next = rng(seed);
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    if (!(name in shapes)) throw new Error(`${model}: no shape given for input '${name}'`);
    const meta = session.inputMetadata ? session.inputMetadata[i] : null;
    feeds[name] = makeInput(meta && meta.type ? meta.type : 'float32', shapes[name], next);
  });
  const out = await session.run(feeds);
  await session.release();
  return out;
}

async function main() {
  const args = process.argv.slice(2);
  let seed = 1;
  const pos = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--seed') seed = Number(args[++i]);
    else pos.push(args[i]);
  }
  if (pos.length !== 3) {
    process.stderr.write('usage: node ort-compare.js A.onnx B.onnx NAME:DIMS[,...] [--seed N]\n');
    process.exit(2);
  }
  const shapes = parseShapes(pos[2]);
  const a = await run(pos[0], shapes, seed);
  const b = await run(pos[1], shapes, seed);
  let worst = 0;
  let ok = true;
  for (const name of Object.keys(a)) {
    const x = a[name];
    const y = b[name];
    if (!y || x.type !== y.type || x.dims.join('x') !== y.dims.join('x')) {
      process.stdout.write(`${name} mismatch ${x.type} ${x.dims.join('x')} vs ${y ? `${y.type} ${y.dims.join('x')}` : 'missing'}\n`);
      ok = false;
      continue;
    }
    let m = 0;
    for (let i = 0; i < x.data.length; i++) {
      const d = Math.abs(Number(x.data[i]) - Number(y.data[i]));
      if (!(d <= m)) m = d; // NaN propagates as the worst
    }
    process.stdout.write(`${name} max_abs ${m}\n`);
    if (!(m <= worst)) worst = m;
  }
  process.stdout.write(`max_abs ${worst}\n`);
  process.exit(ok ? 0 : 1);
}

main().catch((e) => {
  process.stderr.write(`ort-compare: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
