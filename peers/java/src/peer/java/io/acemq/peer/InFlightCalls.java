package io.acemq.peer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The {@code request} and {@code gather} commands in flight, by requester, so that
 * {@code requester.close} answers only after the answers of the calls the close ended
 * (protocol 3: a pending call ends {@code closed}, and its answer comes first).
 */
final class InFlightCalls {
    /** One command: its binding call once sent, and its answer once written. */
    static final class Call {
        private final CompletableFuture<CompletableFuture<?>> sent = new CompletableFuture<>();
        private final CompletableFuture<Void> answered;

        private Call(CompletableFuture<Void> answered) {
            this.answered = answered;
        }

        /** The binding took the call; {@code result} completes when it ends. */
        void sent(CompletableFuture<?> result) {
            sent.complete(result);
        }

        /** The binding refused the call: its answer (an error) is written as soon as may be. */
        void refused(Throwable error) {
            sent.completeExceptionally(error);
        }
    }

    private final Map<String, Set<Call>> byRequester = new ConcurrentHashMap<>();

    /** A command for {@code requester}; {@code answered} completes once its answer is written. */
    Call begin(String requester, CompletableFuture<Void> answered) {
        Call call = new Call(answered);
        Set<Call> calls = byRequester.computeIfAbsent(requester, name -> ConcurrentHashMap.newKeySet());
        calls.add(call);
        answered.whenComplete((ignored, error) -> calls.remove(call));
        return call;
    }

    /**
     * Called once the requester is closed: waits, at most {@code bound}, for the answer of every
     * call of it that has ended (or that the binding refused). A call the close left pending (a
     * binding that lets calls wait out their timeout) is not waited for: its answer comes when
     * it ends.
     */
    void awaitEnded(String requester, Duration bound) throws InterruptedException {
        Set<Call> calls = byRequester.getOrDefault(requester, Set.of());
        // Attached after the close: isDone() is read once the close has done its work.
        List<CompletableFuture<Void>> answers = calls.stream()
                .map(call -> call.sent
                        .handle((result, error) -> error != null || result.isDone())
                        .thenCompose(ended -> ended ? call.answered : CompletableFuture.<Void>completedFuture(null)))
                .toList();
        try {
            CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).get(bound.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            System.err.println("peer: requester " + requester + " closed; not every ended call answered in time: " + e);
        }
        byRequester.remove(requester, Set.<Call>of());
    }
}
