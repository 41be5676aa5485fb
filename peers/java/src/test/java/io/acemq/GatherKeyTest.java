package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.impl.LongStringHelper;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GatherKeyTest {
    private static final AMQP.BasicProperties REPLY = new AMQP.BasicProperties.Builder()
            .correlationId("business-correlation")
            .headers(Map.of(Headers.RESPONSE_MESSAGE_ID, LongStringHelper.asLongString("request-message-id")))
            .build();

    @Test
    void gathersAreFoundByTheResponseMessageIdHeader() {
        assertEquals("request-message-id", Requester.gatherKey(RequesterPolicy.SPEC, REPLY));
        assertNull(Requester.gatherKey(RequesterPolicy.SPEC, new AMQP.BasicProperties.Builder()
                .correlationId("business-correlation").build()));
    }

    @Test
    void aCorrelationIdPolicyLooksThemUpByCorrelationIdInstead() {
        RequesterPolicy byCorrelation = PolicyKnobs.resolve(
                RequesterPolicy.SPEC, Map.of("gather_demux_by", "correlation_id"));
        assertEquals("business-correlation", Requester.gatherKey(byCorrelation, REPLY));
    }
}
