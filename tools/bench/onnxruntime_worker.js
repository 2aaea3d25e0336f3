// The onnxruntime baseline of `anvil bench`: a worker that speaks the protocol of
// tools/anvil/bench.h (one JSON object per line on stdin and stdout) and runs ONNX Runtime
// through npm's onnxruntime-node.
//
// Usage: node tools/bench/onnxruntime_worker.js DEPS_DIR
//   DEPS_DIR holds node_modules/onnxruntime-node (scripts/setup_bench.sh installs it there).
'use strict';

const fs = require('fs');
const path = require('path');
const readline = require('readline');

// stdout carries the protocol alone; anything else that prints goes to stderr.
console.log = console.error;
console.info = console.error;
console.warn = console.error;

// ---- .npy files (format version 1.0 to 3.0, C order, little-endian) ----

// descr -> [ONNX Runtime tensor type, typed array]
const NPY_TYPES = {
  '<f4': ['float32', Float32Array],
  '<f8': ['float64', Float64Array],
  '<i4': ['int32', Int32Array],
  '<i8': ['int64', BigInt64Array],
  '|b1': ['bool', Uint8Array],
};

function readNpy(ort, file) {
  const buf = fs.readFileSync(file);
  const fail = (why) => { throw new Error(`${file}: ${why}`); };
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') fail('not a .npy file');
  const major = buf[6];
  let headerLen, headerStart;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    headerLen = buf.readUInt32LE(8);
    headerStart = 12;
  } else {
    fail(`unsupported .npy format version ${major}`);
  }
  const header = buf.toString('latin1', headerStart, headerStart + headerLen);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) {
    fail(`cannot parse the header ${JSON.stringify(header.trim())}`);
  }
  if (fortran[1] !== 'False') fail('Fortran order is not supported (save it in C order)');
  const type = NPY_TYPES[descr[1]];
  if (!type) fail(`dtype '${descr[1]}' is not supported (float32, float64, int32, int64 or bool)`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  if (dims.some((d) => !Number.isInteger(d) || d < 0)) fail(`bad shape (${shape[1]})`);
  const [tensorType, ArrayType] = type;
  const count = dims.reduce((a, b) => a * b, 1);
  const dataStart = headerStart + headerLen;
  const bytes = count * ArrayType.BYTES_PER_ELEMENT;
  if (buf.length - dataStart < bytes) {
    fail(`holds ${buf.length - dataStart} data bytes, its shape needs ${bytes}`);
  }
  // Copy into a fresh buffer: a typed array needs an offset aligned to its element size.
  const start = buf.byteOffset + dataStart;
  const data = new ArrayType(buf.buffer.slice(start, start + bytes));
  return new ort.Tensor(tensorType, data, dims);
}

function writeNpy(file, tensor) {
  const entry = Object.entries(NPY_TYPES).find(([, [t]]) => t === tensor.type);
  if (!entry) throw new Error(`cannot write an output of type ${tensor.type} to .npy`);
  const dims = tensor.dims;
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${entry[0]}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Pad with spaces so that the data starts at a multiple of 64 bytes, as numpy does.
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(header, 'latin1'), body]));
}

// ---- the requests ----

function positiveInt(value, what) {
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(`"${what}" must be a positive integer`);
  }
  return value;
}

function absolutePath(value, what) {
  if (typeof value !== 'string' || value === '') throw new Error(`"${what}" must be a path`);
  return path.resolve(value);
}

class Worker {
  constructor(ort) {
    this.ort = ort;
    this.session = null;
    this.feeds = null;
  }

  async load(req) {
    const model = absolutePath(req.model, 'model');
    const threads = positiveInt(req.threads, 'threads');
    if (typeof req.inputs !== 'object' || req.inputs === null || Array.isArray(req.inputs)) {
      throw new Error('"inputs" must be an object of input name -> .npy file');
    }
    await this.unload();
    let session;
    try {
      session = await this.ort.InferenceSession.create(model, {
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
        executionMode: 'sequential',
        logSeverityLevel: 3,  // errors only: its warnings are not ours to print
      });
    } catch (e) {
      throw new Error(`cannot load ${model}: ${e.message}`);
    }
    try {
      const given = Object.keys(req.inputs);
      const missing = session.inputNames.filter((n) => !given.includes(n));
      const extra = given.filter((n) => !session.inputNames.includes(n));
      const expected = `(${model} takes ${session.inputNames.map((n) => `'${n}'`).join(', ')})`;
      if (missing.length) throw new Error(`missing input '${missing[0]}' ${expected}`);
      if (extra.length) throw new Error(`unknown input '${extra[0]}' ${expected}`);
      const feeds = {};
      for (const name of session.inputNames) {
        const file = absolutePath(req.inputs[name], `inputs.${name}`);
        feeds[name] = readNpy(this.ort, file);
        checkInput(session, name, feeds[name], file, model);
      }
      this.session = session;
      this.feeds = feeds;
    } catch (e) {
      await release(session);
      throw e;
    }
    return {};
  }

  async unload() {
    const session = this.session;
    this.session = null;
    this.feeds = null;
    if (session) await release(session);
  }

  loaded() {
    if (!this.session) throw new Error('no model is loaded (send "load" first)');
    return this.session;
  }

  async run(req) {
    const session = this.loaded();
    const dir = absolutePath(req.outputs_dir, 'outputs_dir');
    const results = await session.run(this.feeds);
    fs.mkdirSync(dir, { recursive: true });
    const outputs = session.outputNames.map((name, i) => {
      const file = path.join(dir, `output_${i}.npy`);
      writeNpy(file, results[name]);
      return file;
    });
    return { outputs };
  }

  async time(req) {
    const session = this.loaded();
    const runs = positiveInt(req.runs, 'runs');
    const ms = [];
    for (let i = 0; i < runs; i++) {
      const start = process.hrtime.bigint();
      await session.run(this.feeds);
      const end = process.hrtime.bigint();
      ms.push(Number(end - start) / 1e6);
    }
    return { ms };
  }
}

// Fails the load, rather than every run, when an input's type or shape is not the model's.
function checkInput(session, name, tensor, file, model) {
  const meta = (session.inputMetadata || []).find((m) => m.name === name);
  if (!meta || !meta.isTensor) return;
  // Symbolic dimensions (strings) accept any size.
  const fits = meta.type === tensor.type && meta.shape.length === tensor.dims.length &&
    meta.shape.every((d, i) => typeof d !== 'number' || d < 0 || d === tensor.dims[i]);
  if (!fits) {
    throw new Error(`input '${name}' from ${file} is ${tensor.type}[${tensor.dims.join(',')}]; ` +
      `${model} takes ${meta.type}[${meta.shape.join(',')}]`);
  }
}

async function release(session) {
  // Frees the native session now rather than whenever the garbage collector runs.
  if (typeof session.release === 'function') await session.release();
}

function send(answer) {
  process.stdout.write(JSON.stringify(answer) + '\n');
}

async function handle(worker, line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    throw new Error(`the request is not JSON: ${e.message}`);
  }
  if (typeof req !== 'object' || req === null || Array.isArray(req)) {
    throw new Error('the request must be a JSON object');
  }
  switch (req.op) {
    case 'load': return worker.load(req);
    case 'run': return worker.run(req);
    case 'time': return worker.time(req);
    case 'quit': process.exit(0);
    default: throw new Error(`unknown op ${JSON.stringify(req.op)} (load, run, time or quit)`);
  }
}

async function main() {
  if (process.argv.length !== 3) {
    console.error('usage: node onnxruntime_worker.js DEPS_DIR');
    process.exit(2);
  }
  const pkgDir = path.resolve(process.argv[2], 'node_modules', 'onnxruntime-node');
  let ort, version;
  try {
    ort = require(pkgDir);
    version = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;
  } catch (e) {
    console.error(`onnxruntime worker: cannot load onnxruntime-node from ${pkgDir} ` +
      `(run scripts/setup_bench.sh ${process.argv[2]}): ${e.message}`);
    process.exit(1);
  }
  send({ ok: true, name: 'onnxruntime', version });

  const worker = new Worker(ort);
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  // One request at a time, in order: the next line is read only once this one is answered.
  for await (const line of lines) {
    if (line.trim() === '') continue;
    try {
      send({ ok: true, ...(await handle(worker, line)) });
    } catch (e) {
      send({ ok: false, error: e && e.message ? e.message : String(e) });
    }
  }
  process.exit(0);  // stdin closed: anvil has gone
}

main();
