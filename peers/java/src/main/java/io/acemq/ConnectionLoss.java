package io.acemq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Method;
import com.rabbitmq.client.ShutdownSignalException;

/** The client's reason for a lost connection or channel, as a person reads it. */
final class ConnectionLoss {
    private ConnectionLoss() {
    }

    /** {@code CONNECTION_FORCED - ...} as the broker said it, else the client's own message. */
    static String reason(ShutdownSignalException cause) {
        Method method = cause.getReason();
        if (method instanceof AMQP.Connection.Close close) {
            return close.getReplyText();
        }
        if (method instanceof AMQP.Channel.Close close) {
            return close.getReplyText();
        }
        Throwable underlying = cause.getCause();
        if (underlying != null && underlying.getMessage() != null) {
            return underlying.getClass().getSimpleName() + ": " + underlying.getMessage();
        }
        return cause.getMessage();
    }
}
