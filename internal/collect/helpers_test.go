package collect

import (
	"errors"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metav1CreateOptions = metav1.CreateOptions{}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }
