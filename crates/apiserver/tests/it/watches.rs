//! Watches and injected faults against the embedded API server with the real kube client.
//! Each test starts its own server; waits are bounded by a deadline that only fails a hung
//! test, and time-based faults run on tokio's paused clock.

use crate::{create_pod, pods_holding};
use apiserver::{Config, FaultResponse};
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use kube::Api;
use serde_json::json;
use std::time::Duration;
use testkit::server::api_status;
use testkit::server::start;
use testkit::server::start_with;
use testkit::within;
use tokio::time::Instant;

#[tokio::test]
async fn watcher_lists_then_streams_changes() {
    let (_server, pods) = pods_holding(start(), &["before"]).await;
    let mut events = watcher(pods.clone(), watcher::Config::default()).boxed();
    let mut listed = Vec::new();
    loop {
        match within("initial list", events.try_next())
            .await
            .unwrap()
            .unwrap()
        {
            watcher::Event::InitApply(p) => listed.push(p.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(listed, ["before"]);
    create_pod(&pods, "after").await.unwrap();
    match within("ADDED", events.try_next()).await.unwrap().unwrap() {
        watcher::Event::Apply(p) => assert_eq!(p.metadata.name.as_deref(), Some("after")),
        other => panic!("expected Apply, got {other:?}"),
    }
    pods.delete("before", &DeleteParams::default())
        .await
        .unwrap();
    match within("DELETED", events.try_next()).await.unwrap().unwrap() {
        watcher::Event::Delete(p) => assert_eq!(p.metadata.name.as_deref(), Some("before")),
        other => panic!("expected Delete, got {other:?}"),
    }
}

#[tokio::test]
async fn watcher_relists_after_a_forced_410_and_keeps_following() {
    let (server, pods) = pods_holding(start(), &["a"]).await;
    let mut events = watcher(pods.clone(), watcher::Config::default()).boxed();
    while !matches!(
        within("first list", events.next()).await,
        Some(Ok(watcher::Event::InitDone))
    ) {}

    server.faults().expire_next_watch("pods");
    server.faults().drop_watches();
    let mut saw_gone = false;
    let mut relisted = Vec::new();
    loop {
        match within("re-list", events.next()).await.unwrap() {
            Err(watcher::Error::WatchError(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
                saw_gone = true;
            }
            Err(other) => panic!("unexpected watcher error {other:?}"),
            Ok(watcher::Event::InitApply(p)) => relisted.push(p.metadata.name.unwrap()),
            Ok(watcher::Event::InitDone) => break,
            Ok(_) => {}
        }
    }
    assert!(saw_gone, "the watcher saw the 410");
    assert_eq!(relisted, ["a"]);
    create_pod(&pods, "b").await.unwrap();
    match within("event after re-list", events.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        watcher::Event::Apply(p) => assert_eq!(p.metadata.name.as_deref(), Some("b")),
        other => panic!("expected Apply, got {other:?}"),
    }
}

#[tokio::test]
async fn watch_from_before_the_history_window_gets_410_expired() {
    let config = Config {
        history_window: 3,
        ..Config::default()
    };
    let (_server, pods) = pods_holding(start_with(config), &[]).await;
    let first = create_pod(&pods, "a").await.unwrap();
    for i in 0..5 {
        create_pod(&pods, &format!("p{i}")).await.unwrap();
    }
    let rv = first.metadata.resource_version.unwrap();
    let mut stream = pods
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    match within("ERROR event", stream.try_next()).await.unwrap() {
        Some(WatchEvent::Error(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            assert!(
                status.message.starts_with("too old resource version"),
                "{}",
                status.message
            );
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
}

#[tokio::test]
async fn watch_from_a_kept_resource_version_replays_later_changes() {
    let (_server, pods) = pods_holding(start(), &[]).await;
    let first = create_pod(&pods, "a").await.unwrap();
    create_pod(&pods, "b").await.unwrap();
    pods.delete("a", &DeleteParams::default()).await.unwrap();
    let rv = first.metadata.resource_version.unwrap();
    let stream = pods.watch(&WatchParams::default(), &rv).await.unwrap();
    let events: Vec<String> = within("replay", stream.take(2).try_collect::<Vec<_>>())
        .await
        .unwrap()
        .into_iter()
        .map(|e| match e {
            WatchEvent::Added(p) => format!("ADDED {}", p.metadata.name.unwrap()),
            WatchEvent::Deleted(p) => format!("DELETED {}", p.metadata.name.unwrap()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(events, ["ADDED b", "DELETED a"]);
}

#[tokio::test]
async fn watch_with_a_selector_sees_a_relabelled_object_leave_as_deleted() {
    let (_server, pods) = pods_holding(start(), &["a"]).await;
    let mut stream = pods
        .watch(&WatchParams::default().labels("app=web"), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(
        within("ADDED", stream.try_next()).await.unwrap(),
        Some(WatchEvent::Added(_))
    ));
    let relabel = json!({"metadata": {"labels": {"app": "db"}}});
    pods.patch("a", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    assert!(matches!(
        within("DELETED", stream.try_next()).await.unwrap(),
        Some(WatchEvent::Deleted(_))
    ));
}

#[tokio::test]
async fn watch_is_closed_after_the_configured_number_of_events() {
    let (server, pods) = pods_holding(start(), &["a", "b", "c"]).await;
    server.faults().drop_watches_after_events(Some(2));
    let stream = pods.watch(&WatchParams::default(), "0").await.unwrap();
    let events = within("stream end", stream.try_collect::<Vec<_>>())
        .await
        .unwrap();
    assert_eq!(events.len(), 2);
}

/// Opens a watch of `pods` that ends after `timeout` seconds; returns it with the time it was
/// opened.
async fn open_watch(
    pods: &Api<Pod>,
    timeout: u32,
) -> (impl Stream<Item = kube::Result<WatchEvent<Pod>>>, Instant) {
    let started = Instant::now();
    let params = WatchParams::default().timeout(timeout);
    (pods.watch(&params, "0").await.unwrap(), started)
}

// The clock is paused: it jumps to the next timer when everything waits, so these tests
// cost no real time and their ordering of timers is exact.
#[tokio::test(start_paused = true)]
async fn watch_ends_at_its_timeout_seconds() {
    let (_server, pods) = pods_holding(start(), &[]).await;
    let (stream, started) = open_watch(&pods, 60).await;
    let events = stream.try_collect::<Vec<_>>().await.unwrap();
    // Only the bookmarks sent every 30 seconds while the namespace stays empty.
    assert!(
        events.iter().all(|e| matches!(e, WatchEvent::Bookmark(_))),
        "{events:?}"
    );
    assert!(started.elapsed() >= Duration::from_secs(60));
}

#[tokio::test(start_paused = true)]
async fn watches_open_at_the_drop_time_are_closed() {
    let (server, pods) = pods_holding(start(), &[]).await;
    let (stream, started) = open_watch(&pods, 290).await;
    server
        .faults()
        .drop_watches_at(started + Duration::from_secs(30));
    stream.try_collect::<Vec<_>>().await.unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(30) && elapsed < Duration::from_secs(290),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn watches_that_allow_bookmarks_receive_them() {
    let config = Config {
        bookmark_interval: Duration::from_millis(20),
        ..Config::default()
    };
    let (_server, pods) = pods_holding(start_with(config), &["a"]).await;
    let params = WatchParams::default(); // kube asks for bookmarks by default
    let mut stream = pods.watch(&params, "0").await.unwrap().boxed();
    assert!(matches!(
        within("ADDED", stream.try_next()).await.unwrap(),
        Some(WatchEvent::Added(_))
    ));
    match within("BOOKMARK", stream.try_next()).await.unwrap() {
        Some(WatchEvent::Bookmark(b)) => assert!(!b.metadata.resource_version.is_empty()),
        other => panic!("expected a bookmark, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn injected_latency_delays_matching_requests() {
    let (server, pods) = pods_holding(start(), &[]).await;
    server
        .faults()
        .add_latency("list", "pods", Duration::from_secs(5));
    let started = Instant::now();
    pods.list(&ListParams::default()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(5));
    let started = Instant::now();
    pods.get_opt("none").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn injected_faults_answer_with_the_chosen_status() {
    let (server, pods) = pods_holding(start(), &[]).await;
    server
        .faults()
        .fail_next("create", "pods", 1, FaultResponse::TooManyRequests);
    let status = api_status(create_pod(&pods, "a").await.unwrap_err());
    assert_eq!(
        (status.code, status.reason.as_str()),
        (429, "TooManyRequests")
    );
    create_pod(&pods, "a").await.unwrap();

    server.faults().fail("get", "pods", 1.0);
    assert_eq!(api_status(pods.get("a").await.unwrap_err()).code, 500);
    server.faults().clear();
    pods.get("a").await.unwrap();

    server
        .faults()
        .fail_next("patch", "pods/status", 1, FaultResponse::Conflict);
    let st = json!({"status": {"phase": "Running"}});
    let status = api_status(
        pods.patch_status("a", &PatchParams::default(), &Patch::Merge(&st))
            .await
            .unwrap_err(),
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));

    let counts = server.request_counts();
    assert_eq!(counts[&("create".to_owned(), "pods".to_owned())], 2);
    assert_eq!(counts[&("patch".to_owned(), "pods/status".to_owned())], 1);
}

#[tokio::test]
async fn a_streaming_list_sends_the_objects_then_a_bookmark_that_ends_them() {
    let (_server, pods) = pods_holding(start(), &["a", "b"]).await;
    let params = WatchParams {
        send_initial_events: true,
        bookmarks: true,
        ..WatchParams::default()
    };
    let mut events = pods.watch(&params, "0").await.unwrap().boxed();
    let mut added = Vec::new();
    let end = loop {
        match within("initial events", events.try_next())
            .await
            .unwrap()
            .unwrap()
        {
            WatchEvent::Added(p) => added.push(p.metadata.name.unwrap()),
            WatchEvent::Bookmark(b) => break b,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(added, ["a", "b"]);
    assert_eq!(
        end.metadata
            .annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true")
    );
    create_pod(&pods, "c").await.unwrap();
    match within("a later change", events.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        WatchEvent::Added(p) => assert_eq!(p.metadata.name.as_deref(), Some("c")),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn streaming_list_options_are_checked_as_kube_apiserver_checks_them() {
    let (server, pods) = pods_holding(start(), &[]).await;
    // sendInitialEvents needs resourceVersionMatch=NotOlderThan, and the match needs it.
    let (code, body) = testkit::server::send(
        &server,
        "GET",
        "/api/v1/namespaces/default/pods?watch=true&sendInitialEvents=true",
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["field"],
        "resourceVersionMatch"
    );
    let (code, body) = testkit::server::send(
        &server,
        "GET",
        "/api/v1/namespaces/default/pods?watch=true&resourceVersionMatch=NotOlderThan",
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert!(body["message"].as_str().unwrap().contains(
        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
    ));
    // Without the WatchList feature (v1.33) the same well-formed request is refused.
    server.set_watch_list(false);
    let params = WatchParams {
        send_initial_events: true,
        bookmarks: true,
        ..WatchParams::default()
    };
    let status = api_status(pods.watch(&params, "0").await.err().unwrap());
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains("WatchList feature gate"),
        "{status:?}"
    );
}
