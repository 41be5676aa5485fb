package io.acemq.peer;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.acemq.ConnectionLostException;
import io.acemq.ReplyDecodeException;
import io.acemq.RequestTimedOutException;
import io.acemq.RequestTimeoutException;
import io.acemq.RequesterClosedException;
import io.acemq.ResponderFailedException;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * A call's outcome fields from how the binding's call ended. The binding's error is looked for
 * down the cause chain, whatever wraps it (a future's ExecutionException, a dependent stage's
 * CompletionException, the blocking API's AcemqException): a timeout must be the timeout
 * outcome, never a refused call because it came wrapped. Anything else is thrown back as the
 * command's failure ({@code ok: false}, a refusal).
 */
final class CallOutcome {
    /** Far deeper than any wrapping the binding or the JDK does; bounds a cyclic cause chain. */
    private static final int MAX_DEPTH = 16;
    /** The protocol version that has the {@code connection_lost} outcome. */
    static final int LOST = 5;

    private CallOutcome() {
    }

    /** A request's outcome: {@code reply} when {@code error} is null, else the error's. */
    static void ofRequest(JsonObject answer, JsonElement reply, Throwable error, int protocol) throws Exception {
        if (error == null) {
            answer.addProperty("outcome", "reply");
            answer.add("reply", reply);
            return;
        }
        Throwable known = bindingError(error);
        if (known instanceof RequestTimedOutException || known instanceof RequestTimeoutException) {
            answer.addProperty("outcome", "timeout");
        } else if (known instanceof ResponderFailedException failed) {
            answer.addProperty("outcome", "responder_failed");
            answer.addProperty("failure", failed.getFailure());
        } else if (known instanceof ReplyDecodeException decode) {
            answer.addProperty("outcome", "decode_error");
            answer.addProperty("error", decode.getMessage());
        } else if (known instanceof RequesterClosedException && protocol >= 3) {
            answer.addProperty("outcome", "closed");
        } else if (known instanceof ConnectionLostException lost && protocol >= LOST) {
            connectionLost(answer, lost);
        } else {
            throw refusal(error);
        }
    }

    /** A gather's outcome: {@code replies} when {@code error} is null, else the error's. */
    static void ofGather(JsonObject answer, List<JsonElement> replies, Throwable error, int protocol) throws Exception {
        if (error == null) {
            answer.addProperty("outcome", "replies");
            answer.add("replies", array(replies));
            return;
        }
        Throwable known = bindingError(error);
        if (known instanceof RequestTimeoutException shortfall) {
            answer.addProperty("outcome", "timeout_with_partial");
            answer.add("replies", array(shortfall.getPartialReplies()));
        } else if (known instanceof RequestTimedOutException) {
            // The request's timeout error carries no replies: a shortfall with none.
            answer.addProperty("outcome", "timeout_with_partial");
            answer.add("replies", new JsonArray());
        } else if (known instanceof RequesterClosedException && protocol >= 3) {
            answer.addProperty("outcome", "closed");
        } else if (known instanceof ConnectionLostException lost && protocol >= LOST) {
            connectionLost(answer, lost);
        } else {
            throw refusal(error);
        }
    }

    /**
     * A call whose send the binding ended because the requester's connection was lost (its
     * request not confirmed, or the connection down when it was made): the {@code connection_lost}
     * outcome (RR-20.1) from protocol 5 on; before it, a refusal as any other failed send.
     * Returns whether {@code answer} got the outcome.
     */
    static boolean endedByLoss(JsonObject answer, Throwable error, int protocol) {
        if (protocol >= LOST && bindingError(error) instanceof ConnectionLostException lost) {
            connectionLost(answer, lost);
            return true;
        }
        return false;
    }

    private static void connectionLost(JsonObject answer, ConnectionLostException lost) {
        answer.addProperty("outcome", "connection_lost");
        answer.addProperty("reason", lost.getReason());
    }

    /**
     * True when a call the binding refused at once was ended by its requester's close: a close
     * that lands while {@code send} waits for its request's confirm makes {@code send} throw
     * {@link RequesterClosedException}. That call was pending and the close ended it, so its
     * outcome is {@code closed} (RR-9.5), not a refusal; before protocol 3 there is no such outcome.
     */
    static boolean endedByClose(Throwable error, int protocol) {
        return protocol >= 3 && bindingError(error) instanceof RequesterClosedException;
    }

    /** True when {@code error} is, or wraps, the binding's timeout of a request. */
    static boolean isRequestTimeout(Throwable error) {
        return bindingError(error) instanceof RequestTimedOutException;
    }

    /** The first of the binding's call outcomes in {@code error}'s cause chain; null for none. */
    static Throwable bindingError(Throwable error) {
        Throwable cause = error;
        for (int depth = 0; cause != null && depth < MAX_DEPTH; depth++, cause = cause.getCause()) {
            if (cause instanceof RequestTimedOutException || cause instanceof RequestTimeoutException
                    || cause instanceof ResponderFailedException || cause instanceof ReplyDecodeException
                    || cause instanceof RequesterClosedException || cause instanceof ConnectionLostException) {
                return cause;
            }
        }
        return null;
    }

    /** What a failed call is refused with: the error itself, not the future's wrapping of it. */
    private static Exception refusal(Throwable error) {
        Throwable cause = error;
        while ((cause instanceof ExecutionException || cause instanceof CompletionException) && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause instanceof Error fatal) {
            throw fatal;
        }
        return cause instanceof Exception exception ? exception : new ExecutionException(cause);
    }

    private static JsonArray array(List<JsonElement> values) {
        JsonArray array = new JsonArray();
        values.forEach(array::add);
        return array;
    }
}
