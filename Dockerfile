# kube-endpoints: a static binary on an empty image.
#
#   docker build -t REGISTRY/kube-endpoints:TAG .
#
# The build stage runs scripts/build-static.sh (glibc with crt-static); the final stage
# holds only that binary, so the image has no shell, no libc, no package manager and no CA
# bundle: in a pod the client trusts the service account's ca.crt, which is all it needs.
FROM docker.io/library/rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN scripts/build-static.sh /out/kube-endpoints

FROM scratch
COPY --from=build /out/kube-endpoints /kube-endpoints
# The numeric nobody-like user distroless uses; the Deployment also asks for it.
USER 65532:65532
# /metrics, /healthz, /livez and /readyz over HTTPS, as kube-controller-manager's port.
EXPOSE 10257
ENTRYPOINT ["/kube-endpoints"]
CMD ["run"]
