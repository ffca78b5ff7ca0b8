#!/usr/bin/env node
/* Times ONNX Runtime on a model: N runs after a warm-up, with the same seeded input as
 * `whittle run --seed`, intra-op threads as given. Prints `median_ms <x>` and
 * `peak_rss_mb <y>` (the process's peak resident memory, as whittle run --iterations does).
 * --inputs DIR feeds every input from DIR instead, as ort-run.js reads it (<name>.pb or
 * input_<k>.pb), so both runtimes see the same data as `whittle run --load-inputs DIR`.
 *   node scripts/ort-bench.js MODEL (--shape x:1x3x640x640 | --inputs DIR) [--threads N] [--iterations N] */
'use strict';
const fs = require('fs');
const path = require('path');
let ort;
try {
	ort = require('onnxruntime-node');
} catch (e) {
	ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));
}

function seeded(shape) {
	const d = shape.split(':')[1].split('x').map(Number);
	const n = d.reduce((a, b) => a * b, 1);
	const data = new Float32Array(n);
	let s = 12345;
	for (let i = 0; i < n; i++) {
		s = (s * 1103515245 + 12345) >>> 0;
		data[i] = (s >>> 8) / 16777216;
	}
	return new ort.Tensor('float32', data, d);
}

async function main() {
	const args = process.argv.slice(2);
	let model = null, shape = null, inputs = null, threads = 0, iterations = 10;
	for (let i = 0; i < args.length; i++) {
		if (args[i] === '--shape') shape = args[++i];
		else if (args[i] === '--inputs') inputs = args[++i];
		else if (args[i] === '--threads') threads = parseInt(args[++i], 10);
		else if (args[i] === '--iterations') iterations = parseInt(args[++i], 10);
		else model = args[i];
	}
	if (!model || !shape === !inputs) {
		console.error('usage: ort-bench.js MODEL (--shape NAME:DIMS | --inputs DIR) [--threads N] [--iterations N]');
		process.exit(2);
	}
	const opts = { executionMode: 'sequential', interOpNumThreads: 1 };
	if (threads > 0) opts.intraOpNumThreads = threads;
	const feeds = {};
	let sess;
	if (inputs) {
		const { decodeTensorProto, protoToOrt, escapeName } = require('./ort-run.js');
		sess = await ort.InferenceSession.create(model, opts);
		sess.inputNames.forEach((n, k) => {
			let file = path.join(inputs, escapeName(n) + '.pb');
			if (!fs.existsSync(file)) file = path.join(inputs, `input_${k}.pb`);
			feeds[n] = protoToOrt(decodeTensorProto(fs.readFileSync(file), file), file);
		});
	} else {
		feeds[shape.split(':')[0]] = seeded(shape);
		sess = await ort.InferenceSession.create(model, opts);
	}
	await sess.run(feeds);
	const times = [];
	for (let i = 0; i < iterations; i++) {
		const t0 = process.hrtime.bigint();
		await sess.run(feeds);
		times.push(Number(process.hrtime.bigint() - t0) / 1e6);
	}
	times.sort((a, b) => a - b);
	const med = iterations % 2 ? times[(iterations - 1) / 2] : (times[iterations / 2 - 1] + times[iterations / 2]) / 2;
	console.log(`median_ms ${med.toFixed(3)}`);
	console.log(`peak_rss_mb ${(process.resourceUsage().maxRSS / 1024).toFixed(1)}`);
}
main().catch((e) => {
	console.error(`ort-bench: ${e.message}`);
	process.exit(1);
});
