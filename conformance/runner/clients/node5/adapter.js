'use strict';
/*
 * The adapter process of rocketmq-client-nodejs (npm; apache/rocketmq-clients' Node.js client, gRPC to the 5.x
 * proxy; the version package-lock.json pins): adapter protocol v2 (conformance/runner/clients/ADAPTER.md) on
 * stdin/stdout, run as `node adapter.js` by conformance/runner/clients/node5.py.
 *
 * One consumer per process, as python5_adapter.py does for the Python client:
 * - api "simple": a SimpleConsumer; one loop receives (config.batch, config.invisibleMs, long polling
 *   config.awaitMs), writes a `delivery` per message and does what the outcome says after slowMs: ACK,
 *   CHANGE_INVISIBLE (invisibleMs) or NOTHING; each ack or change answers a `settled` line with the proxy's code.
 *   `ready` follows the first answered receive; a failed receive before it is an `error` marked `startup`, one
 *   after it (the proxy restarted) an `error` marked `retried`: the loop receives again.
 * - api "push": a PushConsumer whose listener writes a `delivery` and answers after slowMs: SUCCESS, FAILURE, or
 *   EXCEPTION (it throws); the client acks and nacks itself.
 *
 * stdout carries protocol lines only: console.* is pointed at stderr before the client is loaded; the client logs
 * under $HOME (the driver sets HOME to the run's log directory).
 */

const readline = require('readline');
const path = require('path');

const PROTOCOL = 2;
const OUTCOME_TIMEOUT_MS = 30000;
const STARTUP_LIMIT_MS = 20000;
const SHUTDOWN_LIMIT_MS = 15000;
const APPLIED_CONFIG = [ 'invisibleMs', 'batch', 'awaitMs' ];

const stdoutWrite = process.stdout.write.bind(process.stdout);
for (const name of [ 'log', 'info', 'debug', 'warn', 'error' ]) {
  console[name] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}

const { SimpleConsumer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');

let consumer = null;
let stopping = false;
let started = false;
let fallback = 'NOTHING';
let nextDelivery = 1;
const waiting = new Map(); // delivery number -> resolve(outcome)

function send(message) {
  stdoutWrite(JSON.stringify(message) + '\n');
}

function sleep(ms) {
  return new Promise(resolve => setTimeout(resolve, ms));
}

function getClientIdentity() {
  const pkg = require(path.join(path.dirname(require.resolve('rocketmq-client-nodejs')), '..', 'package.json'));
  return { name: 'rocketmq-client-nodejs', version: pkg.version, language: 'NODE', node: process.versions.node };
}

function toRecord(m) {
  const attempt = m.deliveryAttempt || 1;
  return {
    msgId: m.messageId, topic: m.topic, queueId: -1, queueOffset: m.offset === undefined ? -1 : Number(m.offset),
    deliveryAttempt: attempt, reconsumeTimes: attempt - 1, tags: m.tag || null, messageGroup: m.messageGroup || null,
    bodyBase64: Buffer.from(m.body || '').toString('base64'), properties: Object.fromEntries(m.properties || []),
  };
}

function deliver(message) {
  const number = nextDelivery++;
  return new Promise(resolve => {
    const timer = setTimeout(() => {
      waiting.delete(number);
      send({ type: 'error', message: `no outcome for delivery ${number} within ${OUTCOME_TIMEOUT_MS} ms` });
      resolve({ status: fallback });
    }, OUTCOME_TIMEOUT_MS);
    waiting.set(number, outcome => {
      clearTimeout(timer);
      resolve(outcome);
    });
    send({ type: 'delivery', delivery: number, thread: 'node', messages: [ toRecord(message) ], context: {} });
  });
}

function releaseAll() {
  for (const [ number, resolve ] of waiting) {
    waiting.delete(number);
    resolve({ status: fallback });
    send({ type: 'released', delivery: number, status: fallback });
  }
}

function getCode(error) {
  return error && typeof error.code === 'number' ? String(error.code) : (error && error.name) || 'Error';
}

async function settle(message, outcome) {
  await sleep(outcome.slowMs || 0);
  let action, call;
  if (outcome.status === 'ACK') {
    action = 'ack';
    call = () => consumer.ack(message);
  } else if (outcome.status === 'CHANGE_INVISIBLE') {
    action = 'change';
    call = () => consumer.changeInvisibleDuration(message, outcome.invisibleMs);
  } else {
    return; // NOTHING (or a release at stop): the message comes back when its invisible time ends
  }
  let code = 'OK';
  try {
    await call();
  } catch (error) {
    code = getCode(error);
  }
  const line = { type: 'settled', delivery: outcome.delivery, action, code };
  send(action === 'change' ? Object.assign(line, { invisibleMs: outcome.invisibleMs }) : line);
}

async function receiveLoop(config) {
  const batch = config.batch || 1;
  const invisibleMs = config.invisibleMs || 10000;
  while (!stopping) {
    let messages;
    try {
      messages = await consumer.receive(batch, invisibleMs);
    } catch (error) {
      if (stopping) break;
      send({ type: 'error', message: `receive: ${getCode(error)}: ${error.message}`.slice(0, 500), startup: !started,
        retried: true });
      await sleep(500);
      continue;
    }
    started = true;
    for (const message of messages || []) {
      if (stopping) break;
      await settle(message, await deliver(message));
    }
  }
}

function makeListener() {
  return {
    async consume(message) {
      const outcome = await deliver(message);
      await sleep(outcome.slowMs || 0);
      if (outcome.status === 'EXCEPTION') {
        throw new Error(`outcome script: delivery ${outcome.delivery} raises`);
      }
      return outcome.status === 'SUCCESS' ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE;
    },
  };
}

async function waitStarted() {
  const deadline = Date.now() + STARTUP_LIMIT_MS;
  while (!started && Date.now() < deadline) {
    await sleep(50);
  }
  return started;
}

async function start(request) {
  const config = request.config || {};
  const options = {
    endpoints: request.endpoints, namespace: '', consumerGroup: request.group,
    subscriptions: new Map([[ request.topic, request.expression || '*' ]]),
  };
  if (request.api === 'simple') {
    consumer = new SimpleConsumer(Object.assign(options, { awaitDuration: config.awaitMs || 5000 }));
    await consumer.startup();
    receiveLoop(config);
    if (!await waitStarted()) {
      throw new Error(`no receive answered within ${STARTUP_LIMIT_MS} ms of the start`);
    }
  } else {
    fallback = 'FAILURE';
    consumer = new PushConsumer(Object.assign(options, { messageListener: makeListener() }));
    await consumer.startup();
  }
  const ignored = Object.keys(config).filter(key => !APPLIED_CONFIG.includes(key)).sort();
  send({ type: 'ready', protocol: PROTOCOL, client: getClientIdentity(), ignoredConfig: ignored });
}

async function stop() {
  stopping = true;
  releaseAll();
  if (consumer) {
    const limit = sleep(SHUTDOWN_LIMIT_MS).then(() => { throw new Error(`shutdown took over ${SHUTDOWN_LIMIT_MS} ms`); });
    try {
      await Promise.race([ consumer.shutdown(), limit ]);
    } catch (error) {
      send({ type: 'error', message: `shutdown: ${error.message}` });
    }
  }
  send({ type: 'stopped' });
  process.exit(0);
}

const lines = readline.createInterface({ input: process.stdin });
lines.on('line', text => {
  if (!text.trim()) return;
  const request = JSON.parse(text);
  if (request.type === 'start' && consumer === null) {
    start(request).catch(error => send({ type: 'error', message: `start: ${error.message}`.slice(0, 500) }));
  } else if (request.type === 'outcome') {
    const resolve = waiting.get(request.delivery);
    if (resolve) {
      waiting.delete(request.delivery);
      resolve(request);
    } else {
      send({ type: 'error', message: `outcome for unknown delivery ${request.delivery}` });
    }
  } else if (request.type === 'stop') {
    stop();
  } else {
    send({ type: 'error', message: `unexpected request ${request.type}` });
  }
});
lines.on('close', () => { if (!stopping) stop(); });
