package connector_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMakeClean runs `make clean` and `make clean-k8s` of the Makefile in a folder laid out like
// a used checkout: clean removes local data, binaries, the pinned tools and every node_modules
// the tests installed, and keeps only the source and e2e-k8s's cluster build, which clean-k8s
// removes. (postgres.sh clean finds no cluster of the folder, whose hash no cluster has.)
func TestMakeClean(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") == "true" { // .ci/run runs the tests through make: it is there
			t.Fatal("no make on PATH under CI=true")
		}
		t.Skip("no make on PATH")
	}
	dir := t.TempDir()
	for _, f := range []string{"Makefile", "scripts/postgres.sh"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, f), b)
	}
	gone := []string{
		"bin/connector", ".data/dev.env", ".tmp/dev-smoke.x/out",
		".tools/bin/staticcheck", ".tools/chart-test/0123/node_modules/yaml/index.js",
		"internal/invoke/testdata/js-agent/node_modules/@a2a-js/sdk/index.js",
		"internal/cardfetch/testdata/signer/node_modules/jose/index.js",
		"deploy/helm/test/node_modules/yaml/index.js",
	}
	kept := []string{"internal/invoke/testdata/js-agent/package.json", "deploy/helm/test/render.mjs"}
	const k8s = ".tools/k8s/kubernetes-v1.33.13/kubelet"
	for _, f := range append(append(gone, kept...), k8s) {
		write(t, filepath.Join(dir, f), []byte("x"))
	}

	mustMake(t, dir, "clean")
	for _, f := range gone {
		if exists(t, filepath.Join(dir, f)) {
			t.Errorf("make clean left %s", f)
		}
	}
	for _, d := range []string{"bin", ".data", ".tmp", ".tools/bin", ".tools/chart-test",
		"internal/invoke/testdata/js-agent/node_modules", "deploy/helm/test/node_modules"} {
		if exists(t, filepath.Join(dir, d)) {
			t.Errorf("make clean left the folder %s", d)
		}
	}
	for _, f := range append(kept, k8s, "Makefile") {
		if !exists(t, filepath.Join(dir, f)) {
			t.Errorf("make clean removed %s", f)
		}
	}

	mustMake(t, dir, "clean-k8s")
	if exists(t, filepath.Join(dir, ".tools")) {
		t.Error("make clean-k8s left .tools")
	}
}

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func mustMake(t *testing.T, dir, target string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "make", "-s", "-C", dir, target)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", target, err, out)
	}
}
