// A push consumer of RocketMQ's Java client that prints one JSON line per delivery (prefixed "@@ ", apart from
// the client's own logging) and answers CONSUME_SUCCESS - RECONSUME_LATER for a first delivery whose body starts
// with FAIL - until its standard input closes: the real client of the fault runs against the real broker
// (differential/test_client_faults.py). Arguments: name server, group, topic.
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

public class CrashProbe {
    public static void main(String[] args) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[1]);
        consumer.setNamesrvAddr(args[0]);
        consumer.setInstanceName("crash-probe");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.subscribe(args[2], "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            ConsumeConcurrentlyStatus status = ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            for (MessageExt m : messages) {
                print("{\"uniq\":\"" + m.getProperty("UNIQ_KEY") + "\",\"queue\":" + m.getQueueId()
                    + ",\"offset\":" + m.getQueueOffset() + ",\"reconsumeTimes\":" + m.getReconsumeTimes()
                    + ",\"retryTopic\":" + (m.getProperty("RETRY_TOPIC") != null)
                    + ",\"originMessageId\":" + (m.getProperty("ORIGIN_MESSAGE_ID") != null) + "}");
                if (m.getReconsumeTimes() == 0 && new String(m.getBody()).startsWith("FAIL")) {
                    status = ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return status;
        });
        consumer.start();
        print("{\"ready\":true}");
        while (System.in.read() != -1) {
            // runs until the harness closes standard input
        }
        consumer.shutdown();
        print("{\"stopped\":true}");
    }

    private static synchronized void print(String line) {
        System.out.println("@@ " + line);
        System.out.flush();
    }
}
