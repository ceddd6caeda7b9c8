//! Reading the API server's refusals: which answers mean "already done", "gone" or "stop
//! trying", as both controllers' writers need to tell them apart.

/// True when the API refused a create because the namespace is being deleted: creates there
/// keep failing until it is gone, so the work is dropped quietly, as upstream does.
pub fn is_namespace_terminating(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status)
        if status.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating")))
}

/// True for a 409 AlreadyExists.
pub fn is_already_exists(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 409 && status.reason == "AlreadyExists")
}

/// True for a 404.
pub fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404)
}
