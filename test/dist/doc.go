// Package dist tests what the project distributes, the way a user receives
// it: the container image podman builds from the Dockerfile (its
// configuration, exactly which files it holds, its binaries run as its
// non-root user, and the image itself started by podman), and the release
// binaries scripts/release cross-compiles. Its tests need podman (and runc
// to start the image), which scripts/test installs, so scripts/check leaves
// the package out.
package dist
