package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ReturnListener;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Many publishes outstanding on one channel (RR-13), played against a fake channel: the test
 * sends the broker's frames itself, a basic.return always before the ack of its publish.
 */
class ConfirmingPublisherTest {
    private final FakeChannel fake = new FakeChannel();
    private final ConfirmingPublisher publisher = new ConfirmingPublisher(fake.connection());
    private final ExecutorService callers = Executors.newCachedThreadPool();

    @AfterEach
    void stop() {
        callers.shutdownNow();
    }

    @Test
    void publishesAreOutstandingTogetherAndSettledByTag() throws Exception {
        // One after the other, so the delivery tags are 1, 2, 3 in this order; all three stay
        // outstanding together.
        Future<?> first = publish("requests", "m-1");
        fake.awaitPublishes(1);
        Future<?> second = publish("requests", "m-2");
        fake.awaitPublishes(2);
        Future<?> third = publish("requests", "m-3");
        fake.awaitPublishes(3);
        fake.ack(2, false);
        second.get(5, TimeUnit.SECONDS);
        assertTrue(!first.isDone() && !third.isDone());
        fake.nack(3, false);
        fake.ack(1, false);
        first.get(5, TimeUnit.SECONDS);
        assertInstanceOf(PublishRefusedException.class, failure(third));
    }

    @Test
    void aMultipleAckSettlesEveryTagUpToItsOwn() throws Exception {
        List<Future<?>> sent = List.of(publish("q", "m-1"), publish("q", "m-2"), publish("q", "m-3"));
        fake.awaitPublishes(3);
        fake.ack(3, true);
        for (Future<?> each : sent) {
            each.get(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void aReturnEndsExactlyThePublishItBelongsTo() throws Exception {
        Future<?> routed = publish("requests", "m-1");
        fake.awaitPublishes(1);
        Future<?> lost = publish("nowhere", "m-2");
        fake.awaitPublishes(2);
        Future<?> later = publish("requests", "m-3");
        fake.awaitPublishes(3);
        fake.returned("nowhere", "m-2");
        fake.ack(3, true); // the broker acks a returned publish too
        routed.get(5, TimeUnit.SECONDS);
        later.get(5, TimeUnit.SECONDS);
        Throwable refused = failure(lost);
        assertInstanceOf(PublishRefusedException.class, refused);
        assertTrue(refused.getMessage().contains("312 NO_ROUTE"), refused.getMessage());
    }

    @Test
    void ignoringReturnsTakesTheAckForDeliveryForThatPublishOnly() throws Exception {
        // One publisher serves requests and gathers: each publish says whether a return counts
        // (honour_returns for requests, honour_gather_returns for gathers).
        Future<?> careless = callers.submit(() -> {
            publisher.publish("", "nowhere", properties("m-1"), new byte[0], false);
            return null;
        });
        fake.awaitPublishes(1);
        Future<?> careful = publish("nowhere", "m-2");
        fake.awaitPublishes(2);
        fake.returned("nowhere", "m-1");
        fake.returned("nowhere", "m-2");
        fake.ack(2, true);
        careless.get(5, TimeUnit.SECONDS);
        assertInstanceOf(PublishRefusedException.class, failure(careful));
    }

    private Future<?> publish(String routingKey, String messageId) {
        return callers.submit(() -> {
            publisher.publish("", routingKey, properties(messageId), new byte[0]);
            return null;
        });
    }

    private static AMQP.BasicProperties properties(String messageId) {
        return new AMQP.BasicProperties.Builder().messageId(messageId).correlationId(messageId).build();
    }

    private static Throwable failure(Future<?> future) throws Exception {
        try {
            future.get(5, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("the publish succeeded");
    }

    /** A confirm-mode channel that records publishes and lets the test play the broker's side. */
    private static final class FakeChannel {
        private final List<ConfirmListener> confirms = new CopyOnWriteArrayList<>();
        private final List<ReturnListener> returns = new CopyOnWriteArrayList<>();
        private final List<String> published = new CopyOnWriteArrayList<>();
        private long nextSeqNo = 1;

        Connection connection() {
            Channel channel = (Channel) Proxy.newProxyInstance(getClass().getClassLoader(),
                    new Class<?>[] {Channel.class}, (proxy, method, args) -> switch (method.getName()) {
                        case "getNextPublishSeqNo" -> nextSeqNo;
                        case "basicPublish" -> {
                            published.add((String) args[1]);
                            nextSeqNo++;
                            yield null;
                        }
                        case "addConfirmListener" -> confirms.add((ConfirmListener) args[0]);
                        case "addReturnListener" -> returns.add((ReturnListener) args[0]);
                        case "isOpen" -> true;
                        case "hashCode" -> System.identityHashCode(proxy);
                        case "equals" -> proxy == args[0];
                        default -> null;
                    });
            return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(),
                    new Class<?>[] {Connection.class}, (proxy, method, args) -> switch (method.getName()) {
                        case "createChannel" -> channel;
                        case "hashCode" -> System.identityHashCode(proxy);
                        case "equals" -> proxy == args[0];
                        default -> null;
                    });
        }

        void awaitPublishes(int count) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (published.size() < count && System.nanoTime() < deadline) {
                Thread.sleep(1); // polled: the publishing threads report nothing else
            }
            assertEquals(count, published.size());
        }

        void ack(long tag, boolean multiple) throws Exception {
            for (ConfirmListener listener : confirms) {
                listener.handleAck(tag, multiple);
            }
        }

        void nack(long tag, boolean multiple) throws Exception {
            for (ConfirmListener listener : confirms) {
                listener.handleNack(tag, multiple);
            }
        }

        void returned(String routingKey, String messageId) throws Exception {
            for (ReturnListener listener : returns) {
                listener.handleReturn(312, "NO_ROUTE", "", routingKey, properties(messageId), new byte[0]);
            }
        }
    }
}
