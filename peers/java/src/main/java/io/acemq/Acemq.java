package io.acemq;

/** Names and versions shared by the binding's parts. */
public final class Acemq {
    /** The binding's own version, as reported to tools. */
    public static final String VERSION = "0.9.0";

    private Acemq() {
    }

    /** The version of the RabbitMQ Java client the binding is running against. */
    public static String clientVersion() {
        return com.rabbitmq.client.impl.ClientVersion.VERSION;
    }
}
