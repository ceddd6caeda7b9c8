//! JSON schemas of the served kinds, generated from k8s-openapi's `schemars` implementations.
//!
//! k8s-openapi generates its types and their schemas from kube-apiserver's own OpenAPI
//! document, field descriptions included, so these are the schemas a real server publishes,
//! under the same names (`io.k8s.api.discovery.v1.EndpointSlice`). What the generator does
//! not add is the `x-kubernetes-group-version-kind` extension that kubectl uses to find the
//! schema of a kind, so it is added here.

use crate::resources::{Resource, WithType};
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// Where the document keeps its schemas: `/components/schemas` (v3) or `/definitions` (v2).
pub(super) enum Layout {
    OpenApiV3,
    SwaggerV2,
}

fn generator(layout: Layout) -> SchemaGenerator {
    let mut settings = SchemaSettings::openapi3();
    if let Layout::SwaggerV2 = layout {
        settings.definitions_path = "/definitions".into();
    }
    settings.meta_schema = None;
    settings.into_generator()
}

/// Adds the schema of `resource`'s kind to the generator; returns its schema name.
fn add_kind(generator: &mut SchemaGenerator, resource: &Resource) -> Option<String> {
    resource.with_type(AddSchema(generator)).ok()
}

/// Adds a kind's schema to the generator.
struct AddSchema<'a>(&'a mut SchemaGenerator);

impl WithType for AddSchema<'_> {
    type Output = String;

    fn with<T: DeserializeOwned + Serialize + JsonSchema>(self) -> String {
        self.0.subschema_for::<T>();
        T::schema_name().into_owned()
    }
}

/// The schemas of `resources` and of every type they refer to, by schema name. Each kind's
/// own schema carries `x-kubernetes-group-version-kind`.
pub(super) fn definitions<'a>(
    resources: impl IntoIterator<Item = &'a Resource>,
    layout: Layout,
) -> Map<String, Value> {
    let mut generator = generator(layout);
    let mut kinds = Vec::new();
    for resource in resources {
        if let Some(name) = add_kind(&mut generator, resource) {
            kinds.push((name, resource));
        }
    }
    let mut definitions = generator.take_definitions(true);
    for (name, resource) in kinds {
        if let Some(schema) = definitions.get_mut(&name).and_then(Value::as_object_mut) {
            schema.insert(
                "x-kubernetes-group-version-kind".to_owned(),
                json!([{"group": resource.group, "version": resource.version, "kind": resource.kind}]),
            );
        }
    }
    definitions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::find;

    #[test]
    fn slice_schema_is_tagged_and_describes_its_fields_through_references() {
        let slices = find("discovery.k8s.io", "v1", "endpointslices").unwrap();
        let definitions = definitions([slices], Layout::OpenApiV3);
        let slice = &definitions["io.k8s.api.discovery.v1.EndpointSlice"];
        assert_eq!(
            slice["x-kubernetes-group-version-kind"][0]["kind"],
            "EndpointSlice"
        );
        assert_eq!(
            slice["properties"]["endpoints"]["items"]["$ref"],
            "#/components/schemas/io.k8s.api.discovery.v1.Endpoint"
        );
        let conditions = &definitions["io.k8s.api.discovery.v1.EndpointConditions"];
        assert!(conditions["properties"]["ready"]["description"]
            .as_str()
            .unwrap()
            .contains("ready to receive traffic"));
        let v2 = super::definitions([slices], Layout::SwaggerV2);
        assert_eq!(
            v2["io.k8s.api.discovery.v1.EndpointSlice"]["properties"]["endpoints"]["items"]["$ref"],
            "#/definitions/io.k8s.api.discovery.v1.Endpoint"
        );
    }
}
