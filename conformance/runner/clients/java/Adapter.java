/*
 * The adapter process of Apache RocketMQ's own Java push consumer (the reference: rocketmq-client 4.9.8, or any
 * version on RMQSPEC_JAVA_CLIENT_CLASSPATH; 5.3.3 in POP mode): adapter protocol v1 and v2
 * (conformance/runner/clients/ADAPTER.md) on stdin/stdout, `ready` in the version the `start` named.
 *
 * Compiled at test time by conformance/runner/clients/java.py against the client's jar; run as `java -cp ... Adapter`.
 * One DefaultMQPushConsumer per process. Its listener (concurrently or orderly) writes one `delivery` line per call
 * and blocks until the harness's `outcome` for it arrives (at most OUTCOME_TIMEOUT_MS, then RECONSUME_LATER /
 * SUSPEND_CURRENT_QUEUE_A_MOMENT and an `error` line). The outcome's status is returned as is (EXCEPTION throws,
 * NULL returns null); ackIndex and delayLevel set the concurrently context, autoCommit and suspendMillis the
 * orderly one; v2's slowMs makes the listener sleep that long before it returns.
 *
 * One source for every client version: what moved or appeared between 4.x and 5.x is reached by reflection — the
 * MessageModel enum (org.apache.rocketmq.common.protocol.heartbeat in 4.x, ...remoting.protocol... in 5.x) and the
 * POP settings of a 5.x client (config clientRebalance -> setClientRebalance, invisibleMs -> setPopInvisibleTime);
 * a POP setting the client lacks is reported in ignoredConfig. v2's queueIds (the consumer reads these queue ids of
 * every topic it subscribes, whoever else is in the group: QueueIdsStrategy) and postSubscriptionWhenPull (each pull
 * carries the subscription, so the broker filters by it and not by the group's latest) let a pulling consumer stand
 * beside a popping one of the same group (spec/18-pop-consumer.md PC-04).
 *
 * stdout carries protocol lines only: System.out is pointed at stderr before the client is loaded, so nothing the
 * client or its libraries print can break the protocol. The client's own log goes to the file under
 * -Drocketmq.client.logRoot that the harness chooses.
 */

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public final class Adapter {
    static final long OUTCOME_TIMEOUT_MS = 60_000;
    static final Set<String> CONFIG_KEYS = Set.of("maxReconsumeTimes", "consumeMessageBatchMaxSize", "pullBatchSize",
        "consumeTimeout", "suspendCurrentQueueTimeMillis", "pullInterval");

    /** What the listener throws for an EXCEPTION outcome. */
    static final class ListenerRaised extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ListenerRaised(String message) {
            super(message);
        }
    }

    private final PrintStream out;
    private final AtomicInteger next = new AtomicInteger(1);
    private final Map<Integer, CompletableFuture<JSONObject>> waiting = new ConcurrentHashMap<>();
    private final Set<Integer> released = ConcurrentHashMap.newKeySet();
    /** Deliveries whose line was written: only those are released at stop, so that a `released` line never reaches
     *  the harness before its delivery line (it would be ignored, and the history keep the script's status for a
     *  listener that answered RECONSUME_LATER: the CI rehearsal's CC-02 "accepted CONSUME_SUCCESS"). */
    private final Set<Integer> announced = ConcurrentHashMap.newKeySet();
    private volatile String releaseStatus = "RECONSUME_LATER";
    private volatile boolean stopping;
    private DefaultMQPushConsumer consumer;
    private int protocol = 1;

    Adapter(PrintStream out) {
        this.out = out;
    }

    void send(Map<String, Object> message) {
        String line = JSON.toJSONString(message);
        synchronized (out) {
            out.print(line);
            out.print('\n');
            out.flush();
        }
    }

    void sendError(String text) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("type", "error");
        line.put("message", text);
        send(line);
    }

    static Map<String, Object> toRecord(MessageExt msg) {
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("msgId", msg.getMsgId());
        record.put("topic", msg.getTopic());
        record.put("queueId", msg.getQueueId());
        record.put("queueOffset", msg.getQueueOffset());
        record.put("commitLogOffset", msg.getCommitLogOffset());
        record.put("reconsumeTimes", msg.getReconsumeTimes());
        record.put("bornTimestamp", msg.getBornTimestamp());
        record.put("storeTimestamp", msg.getStoreTimestamp());
        record.put("tags", msg.getTags());
        byte[] body = msg.getBody() == null ? new byte[0] : msg.getBody();
        record.put("bodyBase64", Base64.getEncoder().encodeToString(body));
        record.put("properties", new LinkedHashMap<>(msg.getProperties()));
        return record;
    }

    static Map<String, Object> toQueue(MessageQueue queue) {
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("topic", queue.getTopic());
        record.put("brokerName", queue.getBrokerName());
        record.put("queueId", queue.getQueueId());
        return record;
    }

    /** Write the delivery line and wait for its outcome (or the release at stop, or the time limit). */
    JSONObject deliver(List<MessageExt> msgs, Map<String, Object> context) {
        int number = next.getAndIncrement();
        CompletableFuture<JSONObject> slot = new CompletableFuture<>();
        waiting.put(number, slot);
        List<Map<String, Object>> records = new ArrayList<>();
        for (MessageExt msg : msgs) {
            records.add(toRecord(msg));
        }
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("type", "delivery");
        line.put("delivery", number);
        line.put("thread", Thread.currentThread().getName());
        line.put("messages", records);
        line.put("context", context);
        send(line);
        announced.add(number);
        if (stopping) {
            release(number);
        }
        try {
            return slot.get(OUTCOME_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            sendError("no outcome for delivery " + number + " in " + OUTCOME_TIMEOUT_MS + " ms");
            JSONObject late = new JSONObject();
            late.put("status", releaseStatus);
            return late;
        } catch (InterruptedException e) {
            // The client's shutdown interrupts its consume threads (shutdownNow, 4.9.8's default awaitTerminate 0):
            // answer this listener as at stop, with a `released` line, instead of throwing an exception the
            // history would not show (the client sent the copy back while the history said CONSUME_SUCCESS).
            release(number);
            Thread.currentThread().interrupt();
            return slot.join();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e);
        } finally {
            waiting.remove(number);
            announced.remove(number);
        }
    }

    /** At stop: answer delivery K ourselves so the client's shutdown is not held by a blocked listener. */
    void release(int number) {
        CompletableFuture<JSONObject> slot = waiting.get(number);
        if (slot == null || !released.add(number)) {
            return;
        }
        JSONObject answer = new JSONObject();
        answer.put("status", releaseStatus);
        if (!slot.complete(answer)) {
            return; // the harness's outcome came first: the listener returns it, and no `released` line may say otherwise
        }
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("type", "released");
        line.put("delivery", number);
        line.put("status", releaseStatus);
        send(line);
    }

    void answer(JSONObject outcome) {
        Integer number = outcome.getInteger("delivery");
        CompletableFuture<JSONObject> slot = number == null ? null : waiting.get(number);
        if (slot != null) {
            slot.complete(outcome);
        } else if (number == null || number >= next.get() || !released.contains(number)) {
            sendError("outcome for unknown delivery " + number);
        }
    }

    /** The listener's return value for the outcome: null for NULL; EXCEPTION throws; a status the listener's
     *  type does not have is reported as an `error` (a harness mistake) and thrown. */
    <E extends Enum<E>> E toStatus(Class<E> type, JSONObject outcome) {
        String status = outcome.getString("status");
        if ("EXCEPTION".equals(status)) {
            throw new ListenerRaised("outcome script: delivery " + outcome.getInteger("delivery") + " raises");
        }
        if ("NULL".equals(status)) {
            return null;
        }
        try {
            return Enum.valueOf(type, status);
        } catch (IllegalArgumentException | NullPointerException e) {
            sendError("status " + status + " is not a " + type.getSimpleName());
            throw new ListenerRaised("outcome script: no such status " + status);
        }
    }

    /** v2's slowMs: the listener outlives its time before it answers. */
    static void sleepSlow(JSONObject outcome) {
        long millis = outcome.getLongValue("slowMs");
        if (millis > 0) {
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Calls consumer.NAME(value) when the client has that setter (true), else false. */
    boolean setIfPresent(String name, Object value) throws ReflectiveOperationException {
        for (Method method : consumer.getClass().getMethods()) {
            if (method.getName().equals(name) && method.getParameterCount() == 1) {
                Class<?> type = method.getParameterTypes()[0];
                Object argument = value;
                if (type.isEnum()) {
                    argument = null;
                    for (Object constant : type.getEnumConstants()) {
                        if (((Enum<?>) constant).name().equals(value)) {
                            argument = constant;
                        }
                    }
                }
                method.invoke(consumer, argument);
                return true;
            }
        }
        return false;
    }

    /** Allocates the given queue ids of every topic to this consumer, whatever the group's other clients. */
    static final class QueueIdsStrategy implements AllocateMessageQueueStrategy {
        private final List<Integer> queueIds;

        QueueIdsStrategy(List<Integer> queueIds) {
            this.queueIds = queueIds;
        }

        @Override
        public List<MessageQueue> allocate(String group, String currentCID, List<MessageQueue> mqAll, List<String> cidAll) {
            List<MessageQueue> mine = new ArrayList<>();
            for (MessageQueue queue : mqAll) {
                if (queueIds.contains(queue.getQueueId())) {
                    mine.add(queue);
                }
            }
            return mine;
        }

        @Override
        public String getName() {
            return "QUEUE_IDS";
        }
    }

    final class Concurrently implements MessageListenerConcurrently {
        @Override
        public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
            Map<String, Object> context = new LinkedHashMap<>();
            context.put("queue", toQueue(ctx.getMessageQueue()));
            context.put("ackIndex", ctx.getAckIndex());
            context.put("delayLevelWhenNextConsume", ctx.getDelayLevelWhenNextConsume());
            JSONObject outcome = deliver(msgs, context);
            sleepSlow(outcome);
            if (outcome.containsKey("ackIndex")) {
                ctx.setAckIndex(outcome.getIntValue("ackIndex"));
            }
            if (outcome.containsKey("delayLevel")) {
                ctx.setDelayLevelWhenNextConsume(outcome.getIntValue("delayLevel"));
            }
            return toStatus(ConsumeConcurrentlyStatus.class, outcome);
        }
    }

    final class Orderly implements MessageListenerOrderly {
        @Override
        @SuppressWarnings("deprecation") // COMMIT and ROLLBACK are deprecated in 4.9.8 and still honoured
        public ConsumeOrderlyStatus consumeMessage(List<MessageExt> msgs, ConsumeOrderlyContext ctx) {
            Map<String, Object> context = new LinkedHashMap<>();
            context.put("queue", toQueue(ctx.getMessageQueue()));
            context.put("autoCommit", ctx.isAutoCommit());
            context.put("suspendCurrentQueueTimeMillis", ctx.getSuspendCurrentQueueTimeMillis());
            JSONObject outcome = deliver(msgs, context);
            sleepSlow(outcome);
            if (outcome.containsKey("autoCommit")) {
                ctx.setAutoCommit(outcome.getBooleanValue("autoCommit"));
            }
            if (outcome.containsKey("suspendMillis")) {
                ctx.setSuspendCurrentQueueTimeMillis(outcome.getLongValue("suspendMillis"));
            }
            return toStatus(ConsumeOrderlyStatus.class, outcome);
        }
    }

    /** Create, configure, subscribe and start the consumer; answers the config keys it did not know. */
    List<String> start(JSONObject request) throws Exception {
        consumer = new DefaultMQPushConsumer(request.getString("group"));
        consumer.setNamesrvAddr(request.getString("namesrv"));
        consumer.setInstanceName(request.getString("instance") == null ? "conformance" : request.getString("instance"));
        boolean broadcasting = "broadcasting".equals(request.getString("model"));
        setIfPresent("setMessageModel", broadcasting ? "BROADCASTING" : "CLUSTERING");
        JSONObject config = request.getJSONObject("config") == null ? new JSONObject() : request.getJSONObject("config");
        Set<String> applied = new TreeSet<>(CONFIG_KEYS);
        if (config.containsKey("clientRebalance")
                && setIfPresent("setClientRebalance", config.getBooleanValue("clientRebalance"))) {
            applied.add("clientRebalance");
        }
        if (config.containsKey("invisibleMs") && setIfPresent("setPopInvisibleTime", config.getLongValue("invisibleMs"))) {
            applied.add("invisibleMs");
        }
        if (config.containsKey("maxReconsumeTimes")) {
            consumer.setMaxReconsumeTimes(config.getIntValue("maxReconsumeTimes"));
        }
        if (config.containsKey("consumeMessageBatchMaxSize")) {
            consumer.setConsumeMessageBatchMaxSize(config.getIntValue("consumeMessageBatchMaxSize"));
        }
        if (config.containsKey("pullBatchSize")) {
            consumer.setPullBatchSize(config.getIntValue("pullBatchSize"));
        }
        if (config.containsKey("consumeTimeout")) {
            consumer.setConsumeTimeout(config.getLongValue("consumeTimeout"));
        }
        if (config.containsKey("suspendCurrentQueueTimeMillis")) {
            consumer.setSuspendCurrentQueueTimeMillis(config.getLongValue("suspendCurrentQueueTimeMillis"));
        }
        if (config.containsKey("pullInterval")) {
            consumer.setPullInterval(config.getLongValue("pullInterval"));
        }
        if (config.containsKey("queueIds")) {
            consumer.setAllocateMessageQueueStrategy(new QueueIdsStrategy(config.getJSONArray("queueIds").toJavaList(Integer.class)));
            applied.add("queueIds");
        }
        if (config.containsKey("postSubscriptionWhenPull")) {
            consumer.setPostSubscriptionWhenPull(config.getBooleanValue("postSubscriptionWhenPull"));
            applied.add("postSubscriptionWhenPull");
        }
        String expression = request.getString("expression") == null ? "*" : request.getString("expression");
        consumer.subscribe(request.getString("topic"), expression);
        if ("orderly".equals(request.getString("mode"))) {
            releaseStatus = "SUSPEND_CURRENT_QUEUE_A_MOMENT";
            consumer.registerMessageListener(new Orderly());
        } else {
            consumer.registerMessageListener(new Concurrently());
        }
        consumer.start();
        Set<String> ignored = new TreeSet<>(config.keySet());
        ignored.removeAll(applied);
        return new ArrayList<>(ignored);
    }

    static Map<String, Object> getClientIdentity() {
        Map<String, Object> client = new LinkedHashMap<>();
        // "V4_9_8" -> "4.9.8": the version the jar itself declares, so another jar on the classpath reports its own.
        client.put("name", "rocketmq-client-java");
        client.put("version", MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION).substring(1).replace('_', '.'));
        client.put("language", "JAVA");
        client.put("jvm", System.getProperty("java.version"));
        return client;
    }

    int serve(BufferedReader in) throws Exception {
        String text;
        while ((text = in.readLine()) != null) {
            if (text.isBlank()) {
                continue;
            }
            JSONObject request = JSON.parseObject(text);
            String kind = request.getString("type");
            if ("start".equals(kind) && consumer == null) {
                protocol = request.getIntValue("protocol") == 2 ? 2 : 1;
                List<String> ignored;
                try {
                    ignored = start(request);
                } catch (Exception e) {
                    sendError("start failed: " + e);
                    continue;
                }
                Map<String, Object> ready = new LinkedHashMap<>();
                ready.put("type", "ready");
                ready.put("protocol", protocol);
                ready.put("client", getClientIdentity());
                ready.put("ignoredConfig", ignored);
                send(ready);
            } else if ("outcome".equals(kind)) {
                answer(request);
            } else if ("stop".equals(kind)) {
                break;
            } else {
                sendError("unexpected request " + kind);
            }
        }
        stopping = true;
        for (Integer number : new ArrayList<>(announced)) { // one not yet announced releases itself after its line
            release(number);
        }
        if (consumer != null) {
            consumer.shutdown();
        }
        Map<String, Object> stopped = new LinkedHashMap<>();
        stopped.put("type", "stopped");
        send(stopped);
        return 0;
    }

    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int code = new Adapter(protocol).serve(in);
        protocol.flush();
        // The client's non-daemon threads (netty, timers) may outlive shutdown: the process ends here.
        Runtime.getRuntime().halt(code);
    }
}
