package io.acemq;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The binding's delayed work: one daemon scheduler thread (it never keeps a JVM alive) that
 * only keeps time. A due task runs on a daemon pool instead, because ending a call completes
 * its future, and that runs whatever the application attached to it: one slow callback on
 * the scheduler would make every other call of the process time out late (RR-9.6).
 */
final class Timers {
    private static final ScheduledExecutorService SCHEDULER = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "acemq-timers");
        thread.setDaemon(true);
        return thread;
    });
    private static final ExecutorService DUE = Executors.newCachedThreadPool(runnable -> {
        Thread thread = new Thread(runnable, "acemq-timeout");
        thread.setDaemon(true);
        return thread;
    });

    private Timers() {
    }

    static ScheduledFuture<?> after(Duration delay, Runnable task) {
        return SCHEDULER.schedule(() -> DUE.execute(task), delay.toMillis(), TimeUnit.MILLISECONDS);
    }
}
