//! The embedded API server's integration tests, in one binary: each module is an area of
//! what it serves (objects, watches, validation, reviews, protobuf, kubectl), on the shared
//! test kit (`crates/testkit`).

use k8s_openapi::api::core::v1::Pod;

mod bounded_input;
mod garbage_collection;
mod kubectl;
mod loading;
mod objects;
mod protobuf;
mod resource_versions;
mod reviews;
mod validation;
mod watches;

/// An unscheduled pod labelled `app=web` with one container exposing port 80, without a
/// namespace: the request's namespace is the one it is created in.
pub fn pod(name: &str) -> Pod {
    let mut pod = testkit::pod(name)
        .unscheduled()
        .label("app", "web")
        .container_port("http", 80)
        .object();
    pod.metadata.namespace = None;
    pod
}
