//! The echoes of our own writes: the informer applies what the writer left for them, without
//! decoding, and that is what decoding the server's object would have given.

use std::sync::Arc;
use std::time::Duration;

use controller::informer::echoes::{Echoed, Versioned};
use controller::informer::{Echoes, Handler, Informer, ObjectKey, Store};
use controller::slice_writer::{self, Change, Writes};
use controller::wire::objects::Write;
use controller::wire::Negotiated;
use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference,
};
use k8s_openapi::api::discovery::v1::{
    self as discovery, Endpoint, EndpointConditions, EndpointSlice,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::PostParams;
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use reconcile::keys::ServiceKey;
use reconcile::labels::{SERVICE_NAME, SLICE_CONTROLLER_NAME, SLICE_MANAGED_BY};
use reconcile::projection::{StoredEndpoints, StoredSlice};
use tokio_util::sync::CancellationToken;

/// Holds the informer at the next object added once armed, until released: events behind
/// it wait on the stream, undecoded. On the embedded server a watch event can be applied
/// before the write's answer is read; held like this, every echo comes after its answer, as
/// it does from kube-apiserver, whose watch events pass through etcd's watch and its cache.
#[derive(Clone, Default)]
struct Gate(Arc<std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>>>);

impl Gate {
    /// Holds the informer at the next add; the sender lets it go.
    fn arm(&self) -> std::sync::mpsc::Sender<()> {
        let (release, held) = std::sync::mpsc::channel();
        *self.0.lock().unwrap() = Some(held);
        release
    }
}

impl<P> Handler<P> for Gate {
    fn on_add(&self, _: &Arc<P>) {
        let held = self.0.lock().unwrap().take();
        if let Some(held) = held {
            let _ = held.recv_timeout(Duration::from_secs(30));
        }
    }
    fn on_update(&self, _: &Arc<P>, _: &Arc<P>) {}
    fn on_delete(&self, _: &Arc<P>) {}
}

/// Runs an informer of `K` over all namespaces with echoes, projecting as the controllers'
/// informers do (managedFields dropped, then `project`); returns its store and echoes once
/// synced.
async fn informer<K, P>(
    client: &Client,
    config: watcher::Config,
    project: fn(K) -> P,
    stop: &CancellationToken,
) -> (Store<P>, Echoes<K, P>, Gate)
where
    K: controller::wire::WireKind
        + Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
    K: Echoed,
    P: Versioned + PartialEq + Send + Sync + 'static,
{
    let mut informer = Informer::new(Api::<K>::all(client.clone()), config, move |mut o: K| {
        o.meta_mut().managed_fields = None;
        Some(Arc::new(project(o)))
    });
    let store = informer.store();
    let echoes = informer.echoes();
    let mut synced = informer.synced();
    let stop = stop.clone();
    let gate = Gate::default();
    let held = gate.clone();
    tokio::spawn(async move { informer.run(held, stop.cancelled()).await });
    assert!(synced.wait().await);
    (store, echoes, gate)
}

/// Waits until `store` holds `key` at `resource_version`.
async fn holds<P: Versioned + Send + Sync + 'static>(
    store: &Store<P>,
    key: &ObjectKey,
    resource_version: &str,
) {
    testkit::within("the informer to hold the written version", async {
        while store
            .get(key)
            .is_none_or(|p| p.resource_version() != Some(resource_version))
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
}

fn slice(conditions: EndpointConditions) -> EndpointSlice {
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some("web-".into()),
            namespace: Some("default".into()),
            labels: Some(
                [
                    (SERVICE_NAME.to_owned(), "web".to_owned()),
                    (
                        SLICE_MANAGED_BY.to_owned(),
                        SLICE_CONTROLLER_NAME.to_owned(),
                    ),
                ]
                .into(),
            ),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Service".into(),
                name: "web".into(),
                uid: "5e7ab1f2-0000-4000-8000-000000000001".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        address_type: "IPv4".into(),
        endpoints: (1..=3)
            .map(|i| Endpoint {
                addresses: vec![format!("10.0.0.{i}")],
                conditions: Some(conditions.clone()),
                node_name: Some("node-1".into()),
                zone: Some("zone-a".into()),
                target_ref: Some(ObjectReference {
                    kind: Some("Pod".into()),
                    namespace: Some("default".into()),
                    name: Some(format!("web-{i}")),
                    uid: Some(format!("0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d1{i}")),
                    ..ObjectReference::default()
                }),
                ..Endpoint::default()
            })
            .collect(),
        ports: Some(vec![discovery::EndpointPort {
            name: Some("http".into()),
            port: Some(80),
            protocol: Some("TCP".into()),
            app_protocol: None,
        }]),
    }
}

fn ready(ready: bool) -> EndpointConditions {
    EndpointConditions {
        ready: Some(ready),
        serving: Some(ready),
        terminating: Some(false),
    }
}

/// Writes one slice through the slice writer, the informer held behind another slice's add
/// so that the echo comes after the answer; returns the answer's metadata once the informer
/// holds the written version.
async fn write_slice_held(
    api: &Api<EndpointSlice>,
    echoes: &Echoes<EndpointSlice, StoredSlice>,
    gate: &Gate,
    store: &Store<StoredSlice>,
    writes: Writes<'_>,
) -> ObjectMeta {
    let release = gate.arm();
    api.create(&PostParams::default(), &slice(ready(true)))
        .await
        .unwrap();
    let mut answers = Vec::new();
    let key = ServiceKey::new("default", "web");
    let wire = Negotiated::default();
    let outcome = slice_writer::write_in_order(api, &wire, echoes, &key, writes, |c| {
        if let Change::Created(s) | Change::Updated(s) = c {
            answers.push(s.metadata.clone());
        }
    })
    .await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    release.send(()).unwrap();
    let answer = answers.pop().unwrap();
    let key = ObjectKey::new("default", answer.name.as_deref().unwrap());
    holds(store, &key, answer.resource_version.as_deref().unwrap()).await;
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_we_write_come_back_from_what_we_sent_equal_to_what_the_server_holds() {
    for config in [
        watcher::Config::default().streaming_lists(),
        watcher::Config::default(),
    ] {
        let (_server, client) = testkit::server::start();
        let stop = CancellationToken::new();
        let (store, echoes, gate) = informer(&client, config, StoredSlice::new, &stop).await;
        let api = Api::<EndpointSlice>::namespaced(client.clone(), "default");

        let writes = Writes {
            create: vec![slice(ready(true))],
            update: Vec::new(),
            delete: &[],
        };
        let answer = write_slice_held(&api, &echoes, &gate, &store, writes).await;

        let mut update = slice(ready(false));
        update.metadata.name = answer.name.clone();
        update.metadata.resource_version = answer.resource_version.clone();
        let writes = Writes {
            create: Vec::new(),
            update: vec![update],
            delete: &[],
        };
        let answer = write_slice_held(&api, &echoes, &gate, &store, writes).await;

        // Both echoes were applied from what the writer left, and that is what the server
        // holds, decoded as the informer decodes it.
        assert_eq!(echoes.taken(), 2);
        assert!(echoes.is_empty());
        let name = answer.name.unwrap();
        let mut held = api.get(&name).await.unwrap();
        held.metadata.managed_fields = None;
        assert_eq!(
            *store.get(&ObjectKey::new("default", &name)).unwrap(),
            StoredSlice::new(held)
        );
        stop.cancel();
    }
}

/// Creates `object` as the Endpoints controller's writer does, the informer held behind
/// another object's add so that the echo comes after the answer; once the informer holds the
/// written version, checks that it holds what decoding the server's object gives.
async fn create_endpoints_held(
    api: &Api<Endpoints>,
    echoes: &Echoes<Endpoints, StoredEndpoints>,
    gate: &Gate,
    store: &Store<StoredEndpoints>,
    object: &Endpoints,
) {
    let name = object.metadata.name.clone().unwrap();
    let release = gate.arm();
    let held_behind = Endpoints {
        metadata: ObjectMeta {
            name: Some(format!("gate-{name}")),
            ..ObjectMeta::default()
        },
        subsets: None,
    };
    api.create(&PostParams::default(), &held_behind)
        .await
        .unwrap();
    let wire = Negotiated::default();
    let answer = controller::written::write(api, Write::Create, object, &wire)
        .await
        .unwrap();
    echoes.written(object.clone(), &answer.metadata);
    release.send(()).unwrap();
    let key = ObjectKey::new("default", &name);
    holds(
        store,
        &key,
        answer.metadata.resource_version.as_deref().unwrap(),
    )
    .await;
    let mut held = api.get(&name).await.unwrap();
    held.metadata.managed_fields = None;
    assert_eq!(*store.get(&key).unwrap(), StoredEndpoints::new(held));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_we_write_come_back_from_what_we_sent_equal_to_what_the_server_holds() {
    let (_server, client) = testkit::server::start();
    let stop = CancellationToken::new();
    let config = watcher::Config::default().streaming_lists();
    let (store, echoes, gate) = informer(&client, config, StoredEndpoints::new, &stop).await;
    let api = Api::<Endpoints>::namespaced(client.clone(), "default");
    let sent = Endpoints {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            labels: Some([("app".to_owned(), "web".to_owned())].into()),
            annotations: Some(
                [(
                    "endpoints.kubernetes.io/last-change-trigger-time".to_owned(),
                    "2026-11-29T10:00:00Z".to_owned(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        subsets: Some(vec![EndpointSubset {
            addresses: Some(vec![EndpointAddress {
                ip: "10.0.0.1".into(),
                node_name: Some("node-1".into()),
                target_ref: Some(ObjectReference {
                    kind: Some("Pod".into()),
                    namespace: Some("default".into()),
                    name: Some("web-1".into()),
                    uid: Some("0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d11".into()),
                    ..ObjectReference::default()
                }),
                ..EndpointAddress::default()
            }]),
            not_ready_addresses: None,
            ports: Some(vec![EndpointPort {
                name: Some("http".into()),
                port: 80,
                protocol: Some("TCP".into()),
                app_protocol: None,
            }]),
        }]),
    };
    create_endpoints_held(&api, &echoes, &gate, &store, &sent).await;
    assert_eq!(echoes.taken(), 1);

    // An empty list is sent as one, and comes back absent, as the watch decodes it.
    let empty = Endpoints {
        metadata: ObjectMeta {
            name: Some("empty".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        subsets: Some(Vec::new()),
    };
    create_endpoints_held(&api, &echoes, &gate, &store, &empty).await;
    assert_eq!(echoes.taken(), 2);

    // Another's write of the same object is decoded as ever, and an awaited echo it makes
    // stale is dropped.
    let mut theirs = api.get("web").await.unwrap();
    theirs.subsets = None;
    let replaced = api
        .replace("web", &PostParams::default(), &theirs)
        .await
        .unwrap();
    holds(
        &store,
        &ObjectKey::new("default", "web"),
        replaced.metadata.resource_version.as_deref().unwrap(),
    )
    .await;
    assert_eq!(echoes.taken(), 2);
    stop.cancel();
}
