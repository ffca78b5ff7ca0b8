#!/usr/bin/env node
/* ONNX Runtime golden runner: runs a model with onnxruntime-node on a data folder of ONNX
 * TensorProto files and writes every output as a TensorProto file.
 *
 *   node scripts/ort-run.js MODEL INPUT_DIR OUTPUT_DIR [--all] [--no-opt] [--threads N]
 *                           [--seed S [--shapes NAME:1x3x640x640[,NAME:DIMS...]]]
 *
 * Inputs: for the k-th graph input named n, INPUT_DIR/<escaped n>.pb if present, else
 * INPUT_DIR/input_<k>.pb (the ONNX test-data convention). With --seed, inputs are generated
 * instead (see "Seeded inputs" below) and written to INPUT_DIR as input_<k>.pb, the name
 * stored inside; --shapes fixes the dimensions that the model leaves symbolic.
 * Outputs: OUTPUT_DIR/<escaped name>.pb, where bytes outside [A-Za-z0-9._-] of the UTF-8
 * name become %XX, and the name is stored inside. One line per output on stdout:
 * `<name> <dtype> <dims joined by x, or "scalar">`.
 * --all: every node output of the main graph becomes a graph output, so every intermediate
 *        tensor is written (done by scripts/onnx-mark-all.py: onnxruntime-node cannot).
 * --no-opt: ONNX Runtime's graph optimizations off, so no node is fused or folded away.
 * --threads N: intra-op threads (default: ONNX Runtime's choice); inter-op is always 1.
 * Exit status: 0 ok, 2 usage, 1 anything else (one line on stderr).
 *
 * Seeded inputs: one generator for the whole run, seeded once with S and drawn in input
 * order, element by element in row-major order. It is xoshiro128** (Blackman and Vigna)
 * with its four 32-bit words of state taken from splitmix32 run on S (as an unsigned 32-bit
 * integer): x += 0x9e3779b9; z = x; z = (z ^ z>>>16) * 0x85ebca6b; z = (z ^ z>>>13) *
 * 0xc2b2ae35; z ^= z>>>16. A float element is u*2-1 with u = (next() >>> 8) / 2^24, so it is
 * uniform in [-1, 1) on a 2^-23 grid and exact in every float format of 24+ bits; an integer
 * element is (next() % 3) - 1, a bool element next() & 1.
 *
 * Node has no protobuf library among this project's dependencies, so TensorProto is
 * encoded and decoded here by hand (proto2 wire format, onnx.proto field numbers: dims=1,
 * data_type=2, float_data=4, int32_data=5, string_data=6, int64_data=7, name=8, raw_data=9,
 * double_data=10, uint64_data=11, data_location=14). Reading accepts packed and unpacked
 * encodings of the repeated fields and skips unknown fields; external data is refused.
 * Writing uses raw_data (little-endian) for numbers and string_data for strings. */
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

let ort;
try {
	ort = require('onnxruntime-node');
} catch (e) {
	ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));
}

class UsageError extends Error {}

/* ONNX TensorProto.DataType <-> ONNX Runtime tensor type, with the typed field that holds
 * values when raw_data is absent and the JS array type of ORT's tensor data. */
const DTYPES = {
	1: { ort: 'float32', field: 4, Arr: Float32Array },
	2: { ort: 'uint8', field: 5, Arr: Uint8Array },
	3: { ort: 'int8', field: 5, Arr: Int8Array },
	4: { ort: 'uint16', field: 5, Arr: Uint16Array },
	5: { ort: 'int16', field: 5, Arr: Int16Array },
	6: { ort: 'int32', field: 5, Arr: Int32Array },
	7: { ort: 'int64', field: 7, Arr: BigInt64Array },
	8: { ort: 'string', field: 6, Arr: null },
	9: { ort: 'bool', field: 5, Arr: Uint8Array },
	10: { ort: 'float16', field: 5, Arr: Uint16Array },
	11: { ort: 'float64', field: 10, Arr: Float64Array },
	12: { ort: 'uint32', field: 11, Arr: Uint32Array },
	13: { ort: 'uint64', field: 11, Arr: BigUint64Array },
};
const ORT_TO_ONNX = {};
for (const [k, v] of Object.entries(DTYPES)) ORT_TO_ONNX[v.ort] = Number(k);

/* ---- protobuf wire format ---- */

class Reader {
	constructor(buf, label) {
		this.buf = buf;
		this.pos = 0;
		this.label = label;
	}
	fail(why) {
		throw new Error(`${this.label}: ${why} at byte ${this.pos} (is it a TensorProto file?)`);
	}
	eof() {
		return this.pos >= this.buf.length;
	}
	/* Varints are read as BigInt: dims and int64_data use all 64 bits. */
	varint() {
		let v = 0n;
		for (let shift = 0n; shift < 70n; shift += 7n) {
			if (this.pos >= this.buf.length) this.fail('truncated varint');
			const b = this.buf[this.pos++];
			v |= BigInt(b & 0x7f) << shift;
			if (!(b & 0x80)) return BigInt.asUintN(64, v);
		}
		this.fail('varint longer than 10 bytes');
	}
	bytes(n) {
		if (n > BigInt(this.buf.length - this.pos)) this.fail('length beyond the end');
		const s = this.buf.subarray(this.pos, this.pos + Number(n));
		this.pos += Number(n);
		return s;
	}
	skip(wt) {
		switch (wt) {
		case 0: this.varint(); break;
		case 1: this.bytes(8n); break;
		case 2: this.bytes(this.varint()); break;
		case 5: this.bytes(4n); break;
		default: this.fail(`unsupported wire type ${wt}`);
		}
	}
}

/* Repeated scalar field: appends to list whether the field came packed (wire type 2) or
 * one element per tag (its natural wire type). */
function readRepeated(r, wt, naturalWt, list, one) {
	if (wt === 2 && naturalWt !== 2) {
		const sub = new Reader(r.bytes(r.varint()), r.label);
		while (!sub.eof()) list.push(one(sub));
	} else if (wt === naturalWt) {
		list.push(one(r));
	} else {
		r.fail(`wire type ${wt} for a field of wire type ${naturalWt}`);
	}
}

function decodeTensorProto(buf, label) {
	const r = new Reader(buf, label);
	const t = { dims: [], dataType: 0, name: '', raw: null, float: [], int32: [], str: [],
		int64: [], double: [], uint64: [], external: false };
	const f32 = (rr) => rr.bytes(4n).readFloatLE(0);
	const f64 = (rr) => rr.bytes(8n).readDoubleLE(0);
	while (!r.eof()) {
		const key = r.varint();
		const field = Number(key >> 3n);
		const wt = Number(key & 7n);
		switch (field) {
		case 1: readRepeated(r, wt, 0, t.dims, (rr) => BigInt.asIntN(64, rr.varint())); break;
		case 2: if (wt !== 0) r.fail('bad data_type'); t.dataType = Number(r.varint()); break;
		case 4: readRepeated(r, wt, 5, t.float, f32); break;
		case 5: readRepeated(r, wt, 0, t.int32, (rr) => Number(BigInt.asIntN(32, rr.varint()))); break;
		case 6: if (wt !== 2) r.fail('bad string_data'); t.str.push(Buffer.from(r.bytes(r.varint()))); break;
		case 7: readRepeated(r, wt, 0, t.int64, (rr) => BigInt.asIntN(64, rr.varint())); break;
		case 8: if (wt !== 2) r.fail('bad name'); t.name = r.bytes(r.varint()).toString('utf8'); break;
		case 9: if (wt !== 2) r.fail('bad raw_data'); t.raw = r.bytes(r.varint()); break;
		case 10: readRepeated(r, wt, 1, t.double, f64); break;
		case 11: readRepeated(r, wt, 0, t.uint64, (rr) => rr.varint()); break;
		case 14:
			if (wt !== 0) r.fail('bad data_location');
			if (r.varint() === 1n) t.external = true;
			break;
		default: r.skip(wt);
		}
	}
	if (t.external) throw new Error(`${label}: external data is not supported (inline the tensor)`);
	return t;
}

/* TensorProto -> ort.Tensor (shape as numbers; counts checked against the dims). */
function protoToOrt(t, label) {
	const dt = DTYPES[t.dataType];
	if (!dt) throw new Error(`${label}: unsupported data_type ${t.dataType}`);
	let count = 1;
	const shape = t.dims.map((d) => {
		if (d < 0n || d > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`${label}: bad dimension ${d}`);
		count *= Number(d);
		return Number(d);
	});
	if (!Number.isSafeInteger(count)) throw new Error(`${label}: element count overflows`);
	if (dt.ort === 'string') {
		if (t.str.length !== count) throw new Error(`${label}: ${t.str.length} strings for ${count} elements`);
		return new ort.Tensor('string', t.str.map((b) => b.toString('utf8')), shape);
	}
	let data;
	if (t.raw !== null) {
		const esize = dt.Arr.BYTES_PER_ELEMENT;
		if (t.raw.length !== count * esize)
			throw new Error(`${label}: raw_data has ${t.raw.length} bytes, ${count * esize} expected`);
		/* copy: the file buffer's offset need not be aligned for the typed array */
		const copy = new Uint8Array(t.raw.length);
		copy.set(t.raw);
		data = new dt.Arr(copy.buffer);
	} else {
		const src = { 4: t.float, 5: t.int32, 7: t.int64, 10: t.double, 11: t.uint64 }[dt.field];
		if (src.length !== count) throw new Error(`${label}: ${src.length} values for ${count} elements`);
		data = new dt.Arr(count);
		for (let i = 0; i < count; i++) {
			const v = src[i];
			if (dt.Arr === BigUint64Array) data[i] = BigInt.asUintN(64, v);
			else if (dt.Arr === BigInt64Array) data[i] = v;
			else if (dt.field === 11) data[i] = Number(v); /* uint32 from uint64_data */
			else data[i] = v; /* typed arrays wrap/truncate like the C types */
		}
	}
	return new ort.Tensor(dt.ort, data, shape);
}

function varintBytes(v) {
	let x = BigInt.asUintN(64, BigInt(v));
	const out = [];
	do {
		let b = Number(x & 0x7fn);
		x >>= 7n;
		if (x) b |= 0x80;
		out.push(b);
	} while (x);
	return Buffer.from(out);
}

function lenField(field, payload) {
	return Buffer.concat([varintBytes((field << 3) | 2), varintBytes(payload.length), payload]);
}

function encodeTensorProto(name, tensor) {
	const type = ORT_TO_ONNX[tensor.type];
	if (type === undefined) throw new Error(`output ${name}: unsupported ONNX Runtime type ${tensor.type}`);
	const parts = [];
	if (tensor.dims.length) parts.push(lenField(1, Buffer.concat(tensor.dims.map((d) => varintBytes(d)))));
	parts.push(varintBytes(2 << 3), varintBytes(type));
	if (type === 8) {
		for (const s of tensor.data) parts.push(lenField(6, Buffer.from(s, 'utf8')));
	}
	parts.push(lenField(8, Buffer.from(name, 'utf8')));
	if (type !== 8) {
		const d = tensor.data;
		parts.push(lenField(9, Buffer.from(d.buffer, d.byteOffset, d.byteLength)));
	}
	return Buffer.concat(parts);
}

function escapeName(name) {
	let out = '';
	for (const b of Buffer.from(name, 'utf8')) {
		const c = String.fromCharCode(b);
		out += /[A-Za-z0-9._-]/.test(c) ? c : '%' + b.toString(16).toUpperCase().padStart(2, '0');
	}
	return out;
}

/* ---- seeded inputs (see the header comment) ---- */

function makeRng(seed) {
	let x = seed >>> 0;
	const splitmix32 = () => {
		x = (x + 0x9e3779b9) >>> 0;
		let z = x;
		z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
		z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
		return (z ^ (z >>> 16)) >>> 0;
	};
	const s = [splitmix32(), splitmix32(), splitmix32(), splitmix32()];
	const rotl = (v, k) => ((v << k) | (v >>> (32 - k))) >>> 0;
	return () => {
		const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
		const t = (s[1] << 9) >>> 0;
		s[2] ^= s[0];
		s[3] ^= s[1];
		s[1] ^= s[2];
		s[0] ^= s[3];
		s[2] ^= t;
		s[3] = rotl(s[3], 11);
		for (let i = 0; i < 4; i++) s[i] >>>= 0;
		return result;
	};
}

function randomTensor(meta, shape, next) {
	const count = shape.reduce((a, b) => a * b, 1);
	const type = meta.type;
	const dt = DTYPES[ORT_TO_ONNX[type]];
	if (!dt || type === 'string') throw new Error(`input ${meta.name}: cannot generate ${type} values`);
	const data = new dt.Arr(count);
	for (let i = 0; i < count; i++) {
		const r = next();
		if (type === 'float32' || type === 'float64') data[i] = ((r >>> 8) / 16777216) * 2 - 1;
		else if (type === 'float16') data[i] = f32ToF16Bits(((r >>> 8) / 16777216) * 2 - 1);
		else if (type === 'bool') data[i] = r & 1;
		else if (dt.Arr === BigInt64Array) data[i] = BigInt((r % 3) - 1);
		else if (dt.Arr === BigUint64Array) data[i] = BigInt.asUintN(64, BigInt((r % 3) - 1));
		else data[i] = (r % 3) - 1;
	}
	return new ort.Tensor(type, data, shape);
}

/* Round-to-nearest-even float -> IEEE half, for values in [-1, 1) (no overflow, and
 * subnormals handled). */
function f32ToF16Bits(v) {
	const f = new Float32Array([v]);
	const u = new Uint32Array(f.buffer)[0];
	const sign = (u >>> 16) & 0x8000;
	const exp = (u >>> 23) & 0xff;
	let mant = u & 0x7fffff;
	if (exp === 0) return sign;
	let e = exp - 127 + 15;
	if (e <= 0) {
		if (e < -10) return sign;
		mant |= 0x800000;
		const shift = 14 - e;
		let h = mant >>> shift;
		const rem = mant & ((1 << shift) - 1);
		const half = 1 << (shift - 1);
		if (rem > half || (rem === half && (h & 1))) h++;
		return sign | h;
	}
	let h = (e << 10) | (mant >>> 13);
	const rem = mant & 0x1fff;
	if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
	return sign | h;
}

/* ---- command line ---- */

function parseArgs(argv) {
	const opts = { all: false, noOpt: false, threads: 0, seed: null, shapes: {} };
	const pos = [];
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		const value = () => {
			if (i + 1 >= argv.length) throw new UsageError(`${a} needs a value`);
			return argv[++i];
		};
		if (a === '--all') opts.all = true;
		else if (a === '--no-opt') opts.noOpt = true;
		else if (a === '--threads') {
			opts.threads = Number(value());
			if (!Number.isInteger(opts.threads) || opts.threads < 1) throw new UsageError('--threads needs a positive integer');
		} else if (a === '--seed') {
			const s = value();
			if (!/^\d+$/.test(s) || Number(s) > 0xffffffff) throw new UsageError('--seed needs an integer in [0, 2^32)');
			opts.seed = Number(s);
		} else if (a === '--shapes') {
			for (const item of value().split(',')) {
				const at = item.lastIndexOf(':');
				if (at <= 0) throw new UsageError(`--shapes: "${item}" is not NAME:DIMS`);
				const dims = item.slice(at + 1) === '' ? [] : item.slice(at + 1).split('x').map((d) => {
					if (!/^\d+$/.test(d)) throw new UsageError(`--shapes: bad dimension "${d}" in "${item}"`);
					return Number(d);
				});
				opts.shapes[item.slice(0, at)] = dims;
			}
		} else if (a === '-h' || a === '--help') {
			opts.help = true;
		} else if (a.startsWith('-')) {
			throw new UsageError(`unknown option ${a}`);
		} else pos.push(a);
	}
	if (opts.help) return opts;
	if (pos.length !== 3) throw new UsageError('expected MODEL INPUT_DIR OUTPUT_DIR');
	if (Object.keys(opts.shapes).length && opts.seed === null) throw new UsageError('--shapes needs --seed');
	[opts.model, opts.inputDir, opts.outputDir] = pos;
	return opts;
}

async function main() {
	let opts;
	try {
		opts = parseArgs(process.argv.slice(2));
	} catch (e) {
		if (e instanceof UsageError) {
			process.stderr.write(`ort-run: ${e.message} (see the header of scripts/ort-run.js)\n`);
			process.exit(2);
		}
		throw e;
	}
	if (opts.help) {
		const src = fs.readFileSync(__filename, 'utf8');
		process.stdout.write(src.slice(src.indexOf('/*') + 2, src.indexOf('*/')).replace(/^ \* ?/gm, '') + '\n');
		return;
	}
	if (os.endianness() !== 'LE') throw new Error('raw_data is little-endian; this machine is not');

	let tmpDir = null;
	let modelPath = opts.model;
	try {
		if (opts.all) {
			tmpDir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'ort-run-'));
			modelPath = path.join(tmpDir, 'all-outputs.onnx');
			execFileSync('/usr/bin/python3', [path.join(__dirname, 'onnx-mark-all.py'), opts.model, modelPath],
				{ stdio: ['ignore', 'ignore', 'inherit'] });
		}
		const so = { interOpNumThreads: 1, logSeverityLevel: 3, executionMode: 'sequential' };
		if (opts.threads) so.intraOpNumThreads = opts.threads;
		if (opts.noOpt) so.graphOptimizationLevel = 'disabled';
		const session = await ort.InferenceSession.create(modelPath, so);

		const feeds = {};
		const next = opts.seed === null ? null : makeRng(opts.seed);
		if (next) fs.mkdirSync(opts.inputDir, { recursive: true });
		for (const [k, meta] of session.inputMetadata.entries()) {
			const name = meta.name;
			if (next) {
				if (!meta.isTensor) throw new Error(`input ${name}: not a tensor`);
				let shape = opts.shapes[name];
				if (!shape) {
					shape = meta.shape;
					if (shape.some((d) => typeof d !== 'number' || d < 0))
						throw new Error(`input ${name}: shape [${shape}] is not static (give --shapes ${name}:DIMS)`);
				}
				const t = randomTensor(meta, shape, next);
				feeds[name] = t;
				fs.writeFileSync(path.join(opts.inputDir, `input_${k}.pb`), encodeTensorProto(name, t));
			} else {
				let file = path.join(opts.inputDir, escapeName(name) + '.pb');
				if (!fs.existsSync(file)) file = path.join(opts.inputDir, `input_${k}.pb`);
				if (!fs.existsSync(file))
					throw new Error(`input ${name}: neither ${escapeName(name)}.pb nor input_${k}.pb in ${opts.inputDir}`);
				feeds[name] = protoToOrt(decodeTensorProto(fs.readFileSync(file), file), file);
			}
		}
		for (const name of Object.keys(opts.shapes))
			if (!session.inputNames.includes(name)) throw new Error(`--shapes: the model has no input ${name}`);

		const results = await session.run(feeds);
		fs.mkdirSync(opts.outputDir, { recursive: true });
		const lines = [];
		for (const name of session.outputNames) {
			const t = results[name];
			if (!t || t.location !== undefined && t.location !== 'cpu')
				throw new Error(`output ${name}: not a CPU tensor`);
			fs.writeFileSync(path.join(opts.outputDir, escapeName(name) + '.pb'), encodeTensorProto(name, t));
			lines.push(`${name} ${t.type} ${t.dims.length ? t.dims.join('x') : 'scalar'}`);
		}
		process.stdout.write(lines.join('\n') + (lines.length ? '\n' : ''));
		await session.release();
	} finally {
		if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
	}
}

/* ort-bench.js reads input folders with the same decoder */
module.exports = { decodeTensorProto, protoToOrt, escapeName };

if (require.main === module) {
	main().catch((e) => {
		process.stderr.write(`ort-run: ${e && e.message ? e.message.split('\n')[0] : e}\n`);
		process.exit(1);
	});
}
