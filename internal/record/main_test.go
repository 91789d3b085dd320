//go:build integration

package record

import (
	"os"
	"testing"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// bed is the test bed the integration tests of this package share.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	os.Exit(testbedtest.Main(m, testbed.Options{}, func(b *testbed.Bed) { bed = b }))
}
