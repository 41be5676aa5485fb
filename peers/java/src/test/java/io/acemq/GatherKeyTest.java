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
        assertEquals("request-message-id", Requester.gatherKey(Options.defaults(), REPLY));
        assertNull(Requester.gatherKey(Options.defaults(), new AMQP.BasicProperties.Builder()
                .correlationId("business-correlation").build()));
    }

    @Test
    void theMutantLooksThemUpByCorrelationIdInstead() {
        Options mutant = Options.defaults().withMutant(Mutant.GATHER_BY_CORRELATION_ID);
        assertEquals("business-correlation", Requester.gatherKey(mutant, REPLY));
    }
}
