//! A kubeconfig that points kubectl and kube-rs at the server.

/// The name used for the cluster, user and context.
pub const CONTEXT: &str = "kube-endpoints-dev";

/// A kubeconfig with one plain-HTTP cluster at `server_url`, a user without credentials, and a
/// current context in the `default` namespace.
pub fn render(server_url: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {CONTEXT}
  cluster:
    server: {server_url}
users:
- name: {CONTEXT}
  user: {{}}
contexts:
- name: {CONTEXT}
  context:
    cluster: {CONTEXT}
    user: {CONTEXT}
    namespace: default
current-context: {CONTEXT}
preferences: {{}}
"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn kubeconfig_names_the_server_and_a_current_context() {
        let text = super::render("http://127.0.0.1:1234");
        assert!(text.contains("server: http://127.0.0.1:1234"));
        assert!(text.contains("current-context: kube-endpoints-dev"));
    }
}
