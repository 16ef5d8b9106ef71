'use strict';
/*
 * The adapter process of ali-ons (npm, the Node.js RocketMQ client; the version package-lock.json pins): adapter
 * protocol v1 (conformance/runner/clients/ADAPTER.md) on stdin/stdout.
 *
 * One ali-ons Consumer (MQPushConsumer) per process, run as `node adapter.js` by conformance/runner/clients/node.py. ali-ons
 * has only one consume service: a listener per message (an async function), retried on ACTION_RETRY or a throw, no
 * orderly mode. Its listener writes one `delivery` line per call and waits for the harness's `outcome` for it (at
 * most OUTCOME_TIMEOUT_MS, then it answers RECONSUME_LATER itself and writes an `error` line). The outcome maps to
 * what an ali-ons listener can do: CONSUME_SUCCESS returns nothing, RECONSUME_LATER returns Consumer.ACTION_RETRY,
 * EXCEPTION throws, NULL returns null.
 *
 * stdout carries protocol lines only: console.log/info/debug are pointed at stderr before ali-ons is loaded.
 */

const readline = require('readline');
const path = require('path');

const PROTOCOL = 1;
const OUTCOME_TIMEOUT_MS = 60000;
const CLOSE_TIMEOUT_MS = 15000;
// conformance/runner/clients/ADAPTER.md's config keys that ali-ons' Consumer options name as well (pullInterval in ms as here).
const APPLIED_CONFIG = { maxReconsumeTimes: 'maxReconsumeTimes', pullBatchSize: 'pullBatchSize', pullInterval: 'pullInterval' };

const stdoutWrite = process.stdout.write.bind(process.stdout);
for (const name of [ 'log', 'info', 'debug', 'warn', 'error' ]) {
  console[name] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}

const { Consumer } = require('ali-ons');
const httpclient = require('urllib');

let consumer = null;
let stopping = false;
let nextDelivery = 1;
const waiting = new Map(); // delivery number -> resolve(outcome)

function send(message) {
  stdoutWrite(JSON.stringify(message) + '\n');
}

function getClientIdentity() {
  const pkg = require(path.join(path.dirname(require.resolve('ali-ons')), '..', 'package.json'));
  return { name: 'ali-ons', version: pkg.version, language: 'NODE', node: process.versions.node };
}

function toRecord(msg) {
  return {
    msgId: msg.msgId,
    topic: msg.topic,
    queueId: msg.queueId,
    queueOffset: msg.queueOffset,
    commitLogOffset: msg.commitLogOffset,
    reconsumeTimes: msg.reconsumeTimes,
    bornTimestamp: msg.bornTimestamp,
    storeTimestamp: msg.storeTimestamp,
    tags: msg.tags || null,
    bodyBase64: Buffer.from(msg.body || '').toString('base64'),
    properties: Object.assign({}, msg.properties),
  };
}

function waitForOutcome(number) {
  return new Promise(resolve => {
    const timer = setTimeout(() => {
      waiting.delete(number);
      send({ type: 'error', message: `no outcome for delivery ${number} within ${OUTCOME_TIMEOUT_MS} ms: RECONSUME_LATER` });
      resolve({ status: 'RECONSUME_LATER' });
    }, OUTCOME_TIMEOUT_MS);
    waiting.set(number, outcome => {
      clearTimeout(timer);
      resolve(outcome);
    });
  });
}

async function listener(msg, mq) {
  const number = nextDelivery++;
  const context = mq ? { queue: { topic: mq.topic, brokerName: mq.brokerName, queueId: mq.queueId } } : {};
  const outcome = waitForOutcome(number);
  send({ type: 'delivery', delivery: number, thread: 'main', messages: [ toRecord(msg) ], context });
  const { status } = await outcome;
  switch (status) {
    case 'CONSUME_SUCCESS':
      return undefined;
    case 'RECONSUME_LATER':
      return Consumer.ACTION_RETRY;
    case 'EXCEPTION':
      throw new Error(`the harness's EXCEPTION outcome for delivery ${number}`);
    case 'NULL':
      return null;
    default:
      send({ type: 'error', message: `delivery ${number}: ${status} is no answer an ali-ons listener can give` });
      return Consumer.ACTION_RETRY;
  }
}

async function start(request) {
  if (request.protocol !== PROTOCOL) {
    throw new Error(`protocol ${request.protocol}: this adapter speaks ${PROTOCOL}`);
  }
  if (request.mode !== 'concurrently') {
    throw new Error(`mode ${request.mode}: ali-ons has no orderly consumer`);
  }
  const config = request.config || {};
  const options = {
    consumerGroup: request.group,
    nameSrv: request.namesrv,
    httpclient,
    instanceName: request.instance,
    isBroadcast: request.model === 'broadcasting',
    logger: { info() {}, debug() {}, warn: console.warn, error: console.error },
  };
  const ignored = [];
  for (const [ key, value ] of Object.entries(config)) {
    if (APPLIED_CONFIG[key]) {
      options[APPLIED_CONFIG[key]] = value;
    } else {
      ignored.push(key);
    }
  }
  consumer = new Consumer(options);
  consumer.on('error', err => console.error(`[ali-ons] ${err && err.stack ? err.stack : err}`));
  consumer.subscribe(request.topic, '*', listener);
  await consumer.ready();
  send({ type: 'ready', protocol: PROTOCOL, client: getClientIdentity(), ignoredConfig: ignored.sort() });
}

function withLimit(promise, ms, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([ promise, limit ]).finally(() => clearTimeout(timer));
}

async function stop() {
  stopping = true;
  // Answer every listener still waiting, so the client's close is not held by a blocked listener.
  for (const [ number, resolve ] of waiting) {
    waiting.delete(number);
    send({ type: 'released', delivery: number, status: 'RECONSUME_LATER' });
    resolve({ status: 'RECONSUME_LATER' });
  }
  if (consumer) {
    try {
      await withLimit(consumer.close(), CLOSE_TIMEOUT_MS, 'closing the consumer');
    } catch (err) {
      send({ type: 'error', message: `stop: ${err.message}` });
    }
  }
  send({ type: 'stopped' });
  process.exit(0);
}

function handle(line) {
  let message;
  try {
    message = JSON.parse(line);
  } catch (err) {
    send({ type: 'error', message: `not JSON: ${line.slice(0, 200)}` });
    return;
  }
  switch (message.type) {
    case 'start':
      start(message).catch(err => send({ type: 'error', message: `start: ${err.message}` }));
      break;
    case 'outcome': {
      const resolve = waiting.get(message.delivery);
      if (resolve) {
        waiting.delete(message.delivery);
        resolve(message);
      } else if (!stopping) {
        send({ type: 'error', message: `outcome for delivery ${message.delivery}, which waits for none` });
      }
      break;
    }
    case 'stop':
      stop();
      break;
    default:
      send({ type: 'error', message: `unknown type ${message.type}` });
  }
}

readline.createInterface({ input: process.stdin }).on('line', handle).on('close', () => {
  if (!stopping) {
    stop();
  }
});
