use std::time::Duration;

use tokio::time::Instant;

use super::*;

fn queue() -> WorkQueue<&'static str> {
    WorkQueue::new(QueueConfig::endpoint_slice())
}

#[tokio::test(start_paused = true)]
async fn adding_a_waiting_key_again_is_a_no_op() {
    let queue = queue();
    queue.add("default/web");
    queue.add("default/web");
    queue.add("default/db");
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.get().await, Some("default/web"));
    assert_eq!(queue.get().await, Some("default/db"));
    assert_eq!(queue.try_get(), None);
}

#[tokio::test(start_paused = true)]
async fn a_key_being_processed_is_not_handed_to_a_second_worker() {
    let queue = queue();
    queue.add("default/web");
    assert_eq!(queue.get().await, Some("default/web"));
    queue.add("default/web");
    assert_eq!(queue.try_get(), None, "the key is still being processed");
    assert_eq!(queue.len(), 0);

    // A second worker waiting for work gets the key only once the first is done with it.
    let second = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    tokio::task::yield_now().await;
    assert!(!second.is_finished());
    queue.done(&"default/web");
    assert_eq!(second.await.unwrap(), Some("default/web"));
}

#[tokio::test(start_paused = true)]
async fn key_added_while_processing_is_requeued_once_after_done() {
    let queue = queue();
    queue.add("default/web");
    let key = queue.get().await.unwrap();
    queue.add("default/web");
    queue.add("default/web");
    queue.done(&key);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.try_get(), Some("default/web"));
    queue.done(&"default/web");
    assert_eq!(queue.try_get(), None);
}

#[tokio::test(start_paused = true)]
async fn done_without_a_new_add_does_not_requeue() {
    let queue = queue();
    queue.add("default/web");
    let key = queue.get().await.unwrap();
    queue.done(&key);
    assert!(queue.is_empty());
}

#[tokio::test(start_paused = true)]
async fn key_added_with_delay_is_handed_out_only_after_the_delay() {
    let queue = queue();
    let start = Instant::now();
    queue.add_after("default/web", Duration::from_secs(1));
    assert!(queue.try_get().is_none());
    // The paused clock jumps to the next timer, so this wait costs no real time.
    assert_eq!(queue.get().await, Some("default/web"));
    assert!(start.elapsed() >= Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn delayed_keys_come_out_in_due_order() {
    let queue = queue();
    queue.add_after("c", Duration::from_secs(3));
    queue.add_after("a", Duration::from_secs(1));
    queue.add_after("b", Duration::from_secs(2));
    let mut order = Vec::new();
    for _ in 0..3 {
        let key = queue.get().await.unwrap();
        queue.done(&key);
        order.push(key);
    }
    assert_eq!(order, ["a", "b", "c"]);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_key_keeps_its_earliest_due_time() {
    let queue = queue();
    let start = Instant::now();
    queue.add_after("a", Duration::from_secs(5));
    queue.add_after("a", Duration::from_secs(1));
    queue.add_after("a", Duration::from_secs(3));
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    queue.done(&"a");
    // The later timers were merged into the first one, so nothing else comes out.
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(queue.try_get(), None);
}

#[tokio::test(start_paused = true)]
async fn a_worker_waiting_for_a_late_timer_takes_an_earlier_one_added_meanwhile() {
    let queue = queue();
    let start = Instant::now();
    queue.add_after("late", Duration::from_secs(100));
    let worker = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    tokio::task::yield_now().await;
    queue.add_after("early", Duration::from_secs(1));
    assert_eq!(worker.await.unwrap(), Some("early"));
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn rate_limited_adds_back_off_exponentially_up_to_the_cap() {
    let queue = WorkQueue::new(QueueConfig {
        name: "test".to_string(),
        backoff: BackoffConfig {
            max_delay: Duration::from_secs(8),
            ..BackoffConfig::endpoint_slice()
        },
    });
    let mut waits = Vec::new();
    for _ in 0..6 {
        let start = Instant::now();
        queue.add_rate_limited("a");
        let key = queue.get().await.unwrap();
        waits.push(start.elapsed().as_secs());
        queue.done(&key);
    }
    assert_eq!(waits, [1, 2, 4, 8, 8, 8]);
    assert_eq!(queue.num_requeues(&"a"), 6);
}

#[tokio::test(start_paused = true)]
async fn forget_resets_the_backoff_to_the_base_delay() {
    let queue = queue();
    queue.add_rate_limited("a");
    queue.add_rate_limited("a");
    assert_eq!(queue.num_requeues(&"a"), 2);
    queue.forget(&"a");
    assert_eq!(queue.num_requeues(&"a"), 0);
    let key = queue.get().await.unwrap();
    queue.done(&key);
    let start = Instant::now();
    queue.add_rate_limited("a");
    queue.get().await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn a_key_is_given_up_after_the_retry_limit() {
    let queue = queue();
    for _ in 0..15 {
        assert_eq!(queue.retry_or_forget("a", 15), Retry::Scheduled);
    }
    assert_eq!(queue.retry_or_forget("a", 15), Retry::GaveUp);
    assert_eq!(queue.num_requeues(&"a"), 0);
}

#[tokio::test(start_paused = true)]
async fn shut_down_hands_out_ready_keys_then_none() {
    let queue = queue();
    queue.add("a");
    queue.add_after("later", Duration::from_secs(1));
    queue.shut_down();
    queue.add("b");
    assert!(queue.is_shutting_down());
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_wakes_idle_workers() {
    let queue = queue();
    let worker = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    tokio::task::yield_now().await;
    queue.shut_down();
    assert_eq!(worker.await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn drain_waits_for_in_flight_keys() {
    let queue = queue();
    queue.add("a");
    let key = queue.get().await.unwrap();
    let drain = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shut_down_with_drain().await }
    });
    tokio::task::yield_now().await;
    assert!(!drain.is_finished());
    queue.done(&key);
    drain.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn metrics_count_adds_depth_retries_and_durations() {
    let registry = prometheus::Registry::new();
    let queue = WorkQueue::with_metrics(QueueConfig::endpoints(), &registry).unwrap();
    queue.add("a");
    queue.add("a");
    queue.add("b");
    tokio::time::advance(Duration::from_secs(2)).await;
    let key = queue.get().await.unwrap();
    tokio::time::advance(Duration::from_secs(3)).await;
    queue.add_rate_limited("c");

    let families = registry.gather();
    let metric = |name: &str| {
        let family = families.iter().find(|f| f.name() == name).unwrap();
        let metric = family.get_metric()[0].clone();
        assert_eq!(metric.get_label()[0].value(), "endpoint");
        metric
    };
    assert_eq!(
        metric("workqueue_adds_total").get_counter().get_value(),
        2.0
    );
    assert_eq!(metric("workqueue_depth").get_gauge().get_value(), 1.0);
    assert_eq!(
        metric("workqueue_retries_total").get_counter().get_value(),
        1.0
    );
    let queued = metric("workqueue_queue_duration_seconds");
    assert_eq!(queued.get_histogram().get_sample_sum(), 2.0);
    let unfinished = metric("workqueue_unfinished_work_seconds");
    assert_eq!(unfinished.get_gauge().get_value(), 3.0);
    let longest = metric("workqueue_longest_running_processor_seconds");
    assert_eq!(longest.get_gauge().get_value(), 3.0);

    queue.done(&key);
    let families = registry.gather();
    let work = families
        .iter()
        .find(|f| f.name() == "workqueue_work_duration_seconds")
        .unwrap();
    assert_eq!(work.get_metric()[0].get_histogram().get_sample_sum(), 3.0);
}

#[tokio::test(start_paused = true)]
async fn a_key_carries_the_instant_of_the_first_add_since_it_was_last_handed_out() {
    let queue = queue();
    let start = Instant::now();
    queue.add("default/web");
    tokio::time::advance(Duration::from_secs(1)).await;
    queue.add("default/web");
    tokio::time::advance(Duration::from_secs(1)).await;
    let key = queue.get().await.unwrap();
    assert_eq!(queue.take_changed_since(&key), Some(start));
    assert_eq!(queue.take_changed_since(&key), None, "taken once");

    // Added again while processing: the next hand-out starts at that add.
    let during = Instant::now();
    queue.add("default/web");
    queue.done(&key);
    tokio::time::advance(Duration::from_secs(3)).await;
    let key = queue.get().await.unwrap();
    assert_eq!(queue.take_changed_since(&key), Some(during));
    queue.done(&key);

    // A delayed add starts when it was asked for, not when its delay ran out.
    let asked = Instant::now();
    queue.add_after("default/web", Duration::from_secs(10));
    let key = queue.get().await.unwrap();
    assert_eq!(Instant::now(), asked + Duration::from_secs(10));
    assert_eq!(queue.take_changed_since(&key), Some(asked));
    queue.done(&key);
}

#[tokio::test(start_paused = true)]
async fn a_failed_attempt_hands_its_start_to_the_retry() {
    let queue = queue();
    let start = Instant::now();
    queue.add("default/web");
    let key = queue.get().await.unwrap();
    let since = queue.take_changed_since(&key).unwrap();
    // The sync fails a second later; the worker re-adds the key and keeps its start.
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(queue.retry_or_forget(key, 15), Retry::Scheduled);
    queue.keep_changed_since(&key, since);
    queue.done(&key);
    let key = queue.get().await.unwrap();
    assert_eq!(queue.take_changed_since(&key), Some(start));
    queue.done(&key);
    assert!(
        lock(&queue.inner.state).changed_since.is_empty(),
        "nothing is left behind once handed out"
    );
}

#[tokio::test(start_paused = true)]
async fn a_requeue_starts_no_clock_and_leaves_a_running_one_alone() {
    let queue = queue();
    queue.requeue("default/web");
    queue.requeue_after("default/db", Duration::from_secs(1));
    let key = queue.get().await.unwrap();
    assert_eq!(
        queue.take_changed_since(&key),
        None,
        "a recheck is not a change"
    );
    queue.done(&key);
    let key = queue.get().await.unwrap();
    assert_eq!(queue.take_changed_since(&key), None, "nor is a delayed one");
    queue.done(&key);

    // A change waiting for its batch period keeps its start through a recheck of the key.
    let changed = Instant::now();
    queue.add_after("default/web", Duration::from_secs(5));
    tokio::time::advance(Duration::from_secs(1)).await;
    queue.requeue("default/web");
    let key = queue.get().await.unwrap();
    assert_eq!(queue.take_changed_since(&key), Some(changed));
    queue.done(&key);
}
