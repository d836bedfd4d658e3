// A round trip with Google's Node.js client (@google-cloud/pubsub) on its default transport, gRPC, pointed at
// Metro as at Google's emulator: PUBSUB_EMULATOR_HOST=host:port. Run by tests/e2e/test_grpc_node.py, which
// installs the client (tests/e2e/node/package.json) and sets NODE_PATH to it.
//
// Creates a topic and a subscription, publishes MESSAGES messages, receives them with
// subscription.on('message') (StreamingPull), acknowledges each with ackWithResponse(), closes, and prints one
// line of JSON: what was published, received and acknowledged.
'use strict';

const {PubSub, v1} = require('@google-cloud/pubsub');

const env = (name, fallback) => process.env[name] || fallback;
const project = env('PROJECT', 'node-e2e');
const topicId = env('TOPIC', `node-topic-${process.pid}`);
const subscriptionId = env('SUBSCRIPTION', `node-sub-${process.pid}`);
const count = Number(env('MESSAGES', '5'));
const timeoutMs = Number(env('TIMEOUT_MS', '60000'));

function fail(error) {
  process.stdout.write(JSON.stringify({error: String(error && error.stack ? error.stack : error),
                                       code: error && error.code}) + '\n');
  process.exit(1);
}

async function main() {
  if (!process.env.PUBSUB_EMULATOR_HOST) throw new Error('PUBSUB_EMULATOR_HOST is not set');
  const pubsub = new PubSub({projectId: project});
  const [topic] = await pubsub.createTopic(topicId);
  const [subscription] = await topic.createSubscription(subscriptionId, {ackDeadlineSeconds: 30});

  const published = [];
  for (let i = 0; i < count; i++) {
    const id = await topic.publishMessage({data: Buffer.from(`message ${i}`), attributes: {n: String(i)}});
    published.push({id, data: `message ${i}`, attributes: {n: String(i)}});
  }

  const received = new Map();
  const acks = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`received ${received.size} of ${count} in ${timeoutMs} ms`)),
                             timeoutMs);
    subscription.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    subscription.on('message', (message) => {
      if (!received.has(message.id)) {
        received.set(message.id, {id: message.id, data: message.data.toString(), attributes: message.attributes,
                                  deliveryAttempt: message.deliveryAttempt || 0,
                                  publishTime: message.publishTime.toISOString()});
        acks.push(message.ackWithResponse());
      } else {
        message.ack();
      }
      if (received.size >= count) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const ackResults = await Promise.all(acks);
  await subscription.close();

  // The generated client on the emulator settings the PubSub object derived: a synchronous pull that returns at
  // once finds nothing more to deliver.
  const client = new v1.SubscriberClient(pubsub.options);
  const [left] = await client.pull({subscription: subscription.name, maxMessages: 10, returnImmediately: true});
  await client.close();
  await pubsub.close();

  process.stdout.write(JSON.stringify({
    node: process.version,
    topic: topic.name,
    subscription: subscription.name,
    published,
    received: [...received.values()],
    acknowledged: ackResults,
    leftAfterAck: (left.receivedMessages || []).length,
  }) + '\n');
}

main().catch(fail);
