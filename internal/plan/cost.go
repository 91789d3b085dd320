package plan

// HoursPerMonth is the month the monthly figures are of: 730 hours, a
// year's 8,760 over 12, as cloud price lists count it.
const HoursPerMonth = 730

// MaxFigure bounds each figure of a Cost, in cores, GiB or money per
// month: far above any cluster's, low enough that the sum of a fleet's
// figures keeps its cents. A figure beyond it comes of a tenant's
// minAllowed or replica count, not of a cluster: it is capped at it, and
// the Cost says so (Beyond).
const MaxFigure = 1e12

// Cost is what an item's changes do to the cluster's requests and their
// price: the change per replica times its replicas, in cores, GiB and
// money per month. Increases and decreases are kept apart as well as
// summed, so that a raise is never hidden in a net saving.
type Cost struct {
	// Replicas is how many pods the target runs, and ReplicasSource where
	// that came from, e.g. "spec", "average over 7d, kube-state-metrics"
	// or "HPA current, no kube-state-metrics series".
	Replicas       float64 `json:"replicas"`
	ReplicasSource string  `json:"replicasSource"`
	// CPUCores and MemoryGiB are the change in requests over all replicas;
	// Monthly is its price over HoursPerMonth.
	CPUCores  Delta `json:"cpuCores"`
	MemoryGiB Delta `json:"memoryGiB"`
	Monthly   Delta `json:"monthly"`
	// Prices are those the figures were computed with.
	Prices Prices `json:"prices"`
	// PriceError says why a price annotation of the ResourceRecommend was
	// not used: the run's prices were, in its place.
	PriceError string `json:"priceError,omitempty"`
	// Containers are the figures of each container that changes.
	Containers []ContainerCost `json:"containers,omitempty"`
	// Beyond names the figures that were beyond ±MaxFigure, or not a
	// number, e.g. "cpu cores, money per month": every figure is then
	// capped at it, and the item is left out of any total.
	Beyond string `json:"beyond,omitempty"`
}

// Delta is a change split by direction: Raised sums the increases (>= 0),
// Cut the decreases (<= 0), and Net is their sum.
type Delta struct {
	Net    float64 `json:"net"`
	Raised float64 `json:"raised"`
	Cut    float64 `json:"cut"`
}

// Add counts v, an increase or a decrease.
func (d *Delta) Add(v float64) {
	d.Net += v
	if v > 0 {
		d.Raised += v
	} else {
		d.Cut += v
	}
}

// Merge adds the increases and decreases of o.
func (d *Delta) Merge(o Delta) {
	d.Net += o.Net
	d.Raised += o.Raised
	d.Cut += o.Cut
}

// Prices are the prices of a CPU core and a GiB of memory requested for
// an hour, in Currency.
type Prices struct {
	CPUCoreHour   float64 `json:"cpuCoreHour"`
	MemoryGiBHour float64 `json:"memoryGiBHour"`
	Currency      string  `json:"currency"`
	// Source is "settings", or "annotation" when the ResourceRecommend
	// sets its own.
	Source string `json:"source"`
}

// ContainerCost is one container's share of a Cost.
type ContainerCost struct {
	Name      string  `json:"name"`
	CPUCores  float64 `json:"cpuCores"`
	MemoryGiB float64 `json:"memoryGiB"`
	Monthly   float64 `json:"monthly"`
}
