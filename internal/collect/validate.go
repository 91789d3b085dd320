package collect

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
)

// Reason codes of a rejected ResourceRecommend. They are katalyst's codes,
// verbatim, because they end up as the reason of the Validated condition
// and users match on them.
const (
	// CodeWorkloadNameIsEmpty reports that spec.targetRef.name is empty.
	CodeWorkloadNameIsEmpty = "WorkloadNameIsEmpty"
	// CodeWorkloadsUnsupported reports that spec.targetRef.kind is not supported.
	CodeWorkloadsUnsupported = "WorkloadsUnsupported"
	// CodeAlgorithmUnsupported reports that the algorithm is not supported.
	CodeAlgorithmUnsupported = "AlgorithmUnsupported"
	// CodeContainerPoliciesNotFound reports that containerPolicies is empty.
	CodeContainerPoliciesNotFound = "ContainerPoliciesNotFound"
	// CodeWorkloadNotFound reports that the target does not exist.
	CodeWorkloadNotFound = "WorkloadNotFound"
	// CodeWorkloadMatchError reports that the target could not be resolved or read.
	CodeWorkloadMatchError = "WorkloadMatchError"
	// CodeContainersMatchError reports that the target has no pod template containers.
	// Katalyst's string really ends in "Code".
	CodeContainersMatchError = "ContainersMatchErrorCode"
	// CodeContainerDuplicate reports that two policies name the same container.
	CodeContainerDuplicate = "ContainerDuplicate"
	// CodeContainerNameEmpty reports that a policy has an empty containerName.
	CodeContainerNameEmpty = "ContainerNameEmpty"
	// CodeContainersNotFound reports that a policy names a container the target lacks.
	CodeContainersNotFound = "ContainersNotFound"
	// CodeControlledResourcesPoliciesEmpty reports that a policy controls no resource.
	CodeControlledResourcesPoliciesEmpty = "ControlledResourcesPoliciesEmpty"
	// CodeResourceNameUnsupported reports that a resourceName is not supported.
	CodeResourceNameUnsupported = "ResourceNameUnsupported"
	// CodeControlledValuesUnsupported reports that a controlledValues is not supported.
	CodeControlledValuesUnsupported = "ControlledValuesUnsupported"
	// CodeResourceBuffersUnsupported reports that a bufferPercent is out of range.
	CodeResourceBuffersUnsupported = "ResourceBuffersUnsupported"

	// CodeResourceBoundsInvalid reports a negative minAllowed or maxAllowed,
	// or a minAllowed above maxAllowed. Katalyst ignores both fields and has
	// no code for it.
	CodeResourceBoundsInvalid = "ResourceBoundsInvalid"
	// CodeExtensionsInvalid reports an algorithmPolicy.extensions value this
	// project reads (see ParseExtensions) that is malformed or outside its
	// bounds. Katalyst reads no extension and has no code for it.
	CodeExtensionsInvalid = "ExtensionsInvalid"
)

// Message templates, katalyst's text verbatim (including its capitalisation
// and its "spec.containerPolicies" path, which omits resourcePolicy).
const (
	msgWorkloadNameIsEmpty              = "spec.targetRef.name cannot be empty"
	msgWorkloadsUnsupported             = "spec.targetRef.kind %s is currently unsupported, only support in %s"
	msgAlgorithmUnsupported             = "spec.resourcePolicy.algorithmPolicy.algorithm %s is currently unsupported, only support in %s"
	msgContainerPoliciesNotFound        = "spec.containerPolicies cannot be empty"
	msgWorkloadNotFound                 = "workload not found"
	msgWorkloadMatchError               = "workload matched err"
	msgContainersMatchError             = "containers matched err"
	msgContainerDuplicate               = "container name %s is duplicate"
	msgContainerNameEmpty               = "empty container name"
	msgContainersNotFound               = "container %s is not found"
	msgControlledResourcesPoliciesEmpty = "container(%s) Resources Policies is empty"
	msgResourceNameUnsupported          = "unsupported ResourceName, current supported values: %s"
	msgResourceBuffersUnsupported       = "resource buffers should be in the range from %d to %d"
	// Katalyst defines this template but formats the error with the
	// ResourceName one; its own message could only ever list RequestsOnly,
	// which is no longer true here.
	msgControlledValuesUnsupported = "unsupported ControlledValues, current supported values: %s"
	// What this project adds, in katalyst's style.
	msgResourceBoundNegative  = "container(%s) %s %s %s must not be negative"
	msgResourceBoundsInverted = "container(%s) %s minAllowed %s is greater than maxAllowed %s"
	msgExtensionInvalid       = "spec.resourcePolicy.algorithmPolicy.extensions.%s %s"
	// targetKindsDescription stands for the supported kinds in
	// msgWorkloadsUnsupported, which katalyst fills with a list.
	targetKindsDescription = "[kinds with a pod template]"
)

// Defaults and bounds katalyst applies while validating.
const (
	// DefaultRecommender is the recommender name katalyst's built-in
	// recommender answers to, besides the empty string.
	DefaultRecommender = "default"

	// DefaultAlgorithm replaces an empty algorithm.
	DefaultAlgorithm = v1alpha1.AlgorithmPercentile

	// WildcardContainer is the containerName that applies a policy to every
	// container without a policy of its own.
	WildcardContainer = "*"

	// DefaultBufferPercent replaces a nil bufferPercent.
	DefaultBufferPercent int32 = 30
	// MinBufferPercent and MaxBufferPercent bound bufferPercent, inclusive.
	MinBufferPercent int32 = 0
	MaxBufferPercent int32 = 100

	// DefaultControlledValues replaces a nil controlledValues.
	DefaultControlledValues = v1alpha1.ContainerControlledValuesRequestsOnly
)

// The allowed sets, in the order katalyst prints them in messages. They are
// variables so that supporting more kinds or values is a one-line change;
// nothing modifies them at run time.
var (
	supportedAlgorithms       = []v1alpha1.Algorithm{v1alpha1.AlgorithmPercentile}
	supportedResources        = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	supportedControlledValues = []v1alpha1.ContainerControlledValues{
		v1alpha1.ContainerControlledValuesRequestsOnly,
		v1alpha1.ContainerControlledValuesRequestsAndLimits,
		v1alpha1.ContainerControlledValuesLimitsOnly,
	}
)

var (
	// ErrWorkloadNotFound is returned by a WorkloadLookup when the target
	// does not exist. Validate reports it as CodeWorkloadNotFound.
	ErrWorkloadNotFound = errors.New("workload not found")

	// ErrNoPodTemplate is returned by a WorkloadLookup when the target has
	// no pod template or the template has no containers list. Validate
	// reports it as CodeContainersMatchError.
	ErrNoPodTemplate = errors.New("workload has no pod template")

	// ErrKindUnsupported is returned by a WorkloadLookup when the target's
	// kind has no pod template (a ConfigMap, a Service). Validate reports
	// it as CodeWorkloadsUnsupported.
	ErrKindUnsupported = errors.New("kind has no pod template")

	// ErrWorkloadUnreadable is returned by a WorkloadLookup when the job
	// may not list the target's kind (its role lacks the rule) or the
	// cluster no longer serves it. Validate reports it as
	// CodeWorkloadMatchError, katalyst's code for a target it cannot read.
	ErrWorkloadUnreadable = errors.New("the job cannot read this kind")
)

// ValidationError is a rejected ResourceRecommend: katalyst's reason code and
// message.
type ValidationError struct {
	// Code is the machine-readable reason, one of the Code constants.
	Code string
	// Message is katalyst's human-readable message.
	Message string
}

// Error returns the message, as katalyst's CustomError does.
func (e *ValidationError) Error() string {
	return e.Message
}

func invalid(code, format string, args ...any) *ValidationError {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &ValidationError{Code: code, Message: msg}
}

// WorkloadLookup returns the names of the target's containers and native
// sidecars, excluding one-shot init and ephemeral containers. It returns an
// error wrapping ErrWorkloadNotFound, ErrNoPodTemplate or
// ErrKindUnsupported for those cases, and any other error when the target
// cannot be resolved or read.
type WorkloadLookup func() (containers []string, err error)

// ContainerPolicy is one container's validated policy, with the wildcard
// already expanded.
type ContainerPolicy struct {
	// ContainerName is the name of a container of the workload, never "*".
	ContainerName string
	// Resources are the container's controlled resources, in spec order.
	Resources []ResourcePolicy
}

// ResourcePolicy is one controlled resource of a container, with defaults
// applied.
type ResourcePolicy struct {
	// Resource is the controlled resource.
	Resource corev1.ResourceName
	// BufferPercent is the headroom in percent, DefaultBufferPercent if the
	// spec leaves it out.
	BufferPercent int32
	// MinAllowed and MaxAllowed bound the recommendation; nil means no
	// bound. Validate checks that they are not negative and that min <=
	// max, which katalyst does not (it ignores both).
	MinAllowed, MaxAllowed *resource.Quantity
	// ControlledValues is DefaultControlledValues if the spec leaves it out;
	// any of the three values, where katalyst accepts only RequestsOnly.
	ControlledValues v1alpha1.ContainerControlledValues
}

// IsDefaultRecommender reports whether the built-in recommender handles
// spec: its recommender is "" or "default". Objects for other recommenders
// are skipped silently, without a status, as katalyst does.
func IsDefaultRecommender(spec v1alpha1.ResourceRecommendSpec) bool {
	r := spec.ResourcePolicy.AlgorithmPolicy.Recommender
	return r == "" || r == DefaultRecommender
}

// Validate checks spec with katalyst's rules, in katalyst's order, and
// returns the first error or the per-container policies.
//
// The checks on the spec alone (target name and kind, algorithm, the
// extensions this project reads, a non-empty containerPolicies) run first;
// only when they pass is lookup called, once, to get the workload's
// containers for the per-container checks. lookup must not be nil.
//
// The result is sorted by container name. Katalyst walks a Go map here, so
// both its output order and, with several invalid containers, the error it
// reports vary between runs; sorting makes both deterministic. The
// recommender field is not checked: use IsDefaultRecommender first.
func Validate(spec v1alpha1.ResourceRecommendSpec, lookup WorkloadLookup) ([]ContainerPolicy, *ValidationError) {
	if err := validateTargetRef(spec.TargetRef); err != nil {
		return nil, err
	}
	if err := validateAlgorithm(spec.ResourcePolicy.AlgorithmPolicy.Algorithm); err != nil {
		return nil, err
	}
	if _, err := ParseExtensions(spec.ResourcePolicy.AlgorithmPolicy.Extensions); err != nil {
		return nil, err
	}

	policies := spec.ResourcePolicy.ContainerPolicies
	if len(policies) == 0 {
		return nil, invalid(CodeContainerPoliciesNotFound, msgContainerPoliciesNotFound)
	}
	containers, err := lookup()
	switch {
	case errors.Is(err, ErrWorkloadNotFound):
		return nil, invalid(CodeWorkloadNotFound, msgWorkloadNotFound)
	case errors.Is(err, ErrNoPodTemplate):
		return nil, invalid(CodeContainersMatchError, msgContainersMatchError)
	case errors.Is(err, ErrKindUnsupported):
		return nil, invalid(CodeWorkloadsUnsupported, msgWorkloadsUnsupported, spec.TargetRef.Kind, targetKindsDescription)
	case err != nil:
		return nil, invalid(CodeWorkloadMatchError, msgWorkloadMatchError)
	}
	return validateContainers(policies, containers)
}

func validateTargetRef(ref v1alpha1.CrossVersionObjectReference) *ValidationError {
	if ref.Name == "" {
		return invalid(CodeWorkloadNameIsEmpty, msgWorkloadNameIsEmpty)
	}
	// Any kind with a pod template is supported, which only the lookup can
	// tell; an empty kind cannot be one.
	if ref.Kind == "" {
		return invalid(CodeWorkloadsUnsupported, msgWorkloadsUnsupported, ref.Kind, targetKindsDescription)
	}
	// apiVersion is not checked here; an unusable one fails the lookup.
	return nil
}

func validateAlgorithm(algorithm v1alpha1.Algorithm) *ValidationError {
	if algorithm == "" {
		algorithm = DefaultAlgorithm
	}
	if !slices.Contains(supportedAlgorithms, algorithm) {
		return invalid(CodeAlgorithmUnsupported, msgAlgorithmUnsupported, algorithm, supportedAlgorithms)
	}
	return nil
}

// validateContainers checks the container policies against the workload's
// containers and expands the wildcard.
func validateContainers(policies []v1alpha1.ContainerResourcePolicy, containers []string) ([]ContainerPolicy, *ValidationError) {
	// Pass 1, in spec order: names and non-empty resource lists.
	byName := make(map[string]v1alpha1.ContainerResourcePolicy, len(policies))
	for _, p := range policies {
		name := p.ContainerName
		if _, dup := byName[name]; dup {
			return nil, invalid(CodeContainerDuplicate, msgContainerDuplicate, name)
		}
		if name == "" {
			return nil, invalid(CodeContainerNameEmpty, msgContainerNameEmpty)
		}
		if name != WildcardContainer && !slices.Contains(containers, name) {
			return nil, invalid(CodeContainersNotFound, msgContainersNotFound, name)
		}
		if len(p.ControlledResourcesPolicies) == 0 {
			return nil, invalid(CodeControlledResourcesPoliciesEmpty, msgControlledResourcesPoliciesEmpty, name)
		}
		byName[name] = p
	}

	// The wildcard fills in every container without a policy of its own. An
	// explicit policy replaces the wildcard's whole, it is not merged per
	// resource.
	if wildcard, ok := byName[WildcardContainer]; ok {
		delete(byName, WildcardContainer)
		for _, c := range containers {
			if _, ok := byName[c]; !ok {
				byName[c] = wildcard
			}
		}
	}

	// Pass 2, per resource. Containers go in name order, not katalyst's map
	// order, so that the first error reported is always the same one.
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	sort.Strings(names)

	out := make([]ContainerPolicy, 0, len(names))
	for _, name := range names {
		cp := ContainerPolicy{ContainerName: name}
		// Like katalyst, a resource listed twice yields two entries.
		for _, rp := range byName[name].ControlledResourcesPolicies {
			r, err := validateResource(name, rp)
			if err != nil {
				return nil, err
			}
			cp.Resources = append(cp.Resources, r)
		}
		out = append(out, cp)
	}
	return out, nil
}

func validateResource(name string, rp v1alpha1.ContainerControlledResourcesPolicy) (ResourcePolicy, *ValidationError) {
	if !slices.Contains(supportedResources, rp.ResourceName) {
		return ResourcePolicy{}, invalid(CodeResourceNameUnsupported, msgResourceNameUnsupported, supportedResources)
	}

	controlled := DefaultControlledValues
	if rp.ControlledValues != nil {
		controlled = *rp.ControlledValues
		if !slices.Contains(supportedControlledValues, controlled) {
			return ResourcePolicy{}, invalid(CodeControlledValuesUnsupported, msgControlledValuesUnsupported, supportedControlledValues)
		}
	}

	buffer := DefaultBufferPercent
	if rp.BufferPercent != nil {
		buffer = *rp.BufferPercent
	}
	if buffer < MinBufferPercent || buffer > MaxBufferPercent {
		return ResourcePolicy{}, invalid(CodeResourceBuffersUnsupported, msgResourceBuffersUnsupported, MinBufferPercent, MaxBufferPercent)
	}

	if err := validateBounds(name, rp); err != nil {
		return ResourcePolicy{}, err
	}

	return ResourcePolicy{
		Resource:         rp.ResourceName,
		BufferPercent:    buffer,
		MinAllowed:       copyQuantity(rp.MinAllowed),
		MaxAllowed:       copyQuantity(rp.MaxAllowed),
		ControlledValues: controlled,
	}, nil
}

// copyQuantity copies q so that the result does not alias the spec, which
// the wildcard expansion shares between containers.
func copyQuantity(q *resource.Quantity) *resource.Quantity {
	if q == nil {
		return nil
	}
	c := q.DeepCopy()
	return &c
}

// validateBounds checks minAllowed and maxAllowed of one resource of
// container name.
func validateBounds(name string, rp v1alpha1.ContainerControlledResourcesPolicy) *ValidationError {
	for _, b := range []struct {
		field string
		q     *resource.Quantity
	}{{"minAllowed", rp.MinAllowed}, {"maxAllowed", rp.MaxAllowed}} {
		if b.q != nil && b.q.Sign() < 0 {
			return invalid(CodeResourceBoundsInvalid, msgResourceBoundNegative, name, rp.ResourceName, b.field, b.q)
		}
	}
	if rp.MinAllowed != nil && rp.MaxAllowed != nil && rp.MinAllowed.Cmp(*rp.MaxAllowed) > 0 {
		return invalid(CodeResourceBoundsInvalid, msgResourceBoundsInverted, name, rp.ResourceName, rp.MinAllowed, rp.MaxAllowed)
	}
	return nil
}
