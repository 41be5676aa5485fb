package io.acemq;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** One daemon scheduler for the binding's delayed work, so it never keeps a JVM alive. */
final class Timers {
    private static final ScheduledExecutorService SCHEDULER = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "acemq-timers");
        thread.setDaemon(true);
        return thread;
    });

    private Timers() {
    }

    static ScheduledFuture<?> after(Duration delay, Runnable task) {
        return SCHEDULER.schedule(task, delay.toMillis(), TimeUnit.MILLISECONDS);
    }
}
