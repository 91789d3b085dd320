package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Expect is what a change of values must do to one container.
type Expect struct {
	Container Container
	// Requests and Limits are the values the container must have after
	// the change. The fields they do not name must not change.
	Requests, Limits corev1.ResourceList
	// Utilization are the averageUtilization targets that move with the
	// requests (hpa-mode adjust), with the percentage each must have
	// after the change.
	Utilization map[UtilizationTarget]int32
}

// proofLines bounds how many differences a failed proof lists.
const proofLines = 5

// Prove renders the release with its values and with after instead, and
// checks that the output is the same but for the requests and limits want
// names, which must be the expected quantities. Test hooks are left out,
// as an install does not apply them. When the outputs differ otherwise,
// the release is rendered once more with its own values, and what differs
// between those two renders is not compared, before and after: the
// fields that differ in objects both renders make (a generated password,
// a checksum of it, a random annotation), and the objects of a template
// that makes other objects each time (a random name). If a target
// container is among those objects, or its resources among those fields,
// the proof fails and says so.
//
// Its errors wrap ErrProofFailed and list what changed: object, path,
// before and after. A release that does not render with its own values
// returns the render's error.
func (e Engine) Prove(ctx context.Context, r Release, after map[string]any, want []Expect) error {
	before, err := e.Render(ctx, r)
	if err != nil {
		return err
	}
	changed := r
	changed.Values = after
	rendered, err := e.Render(ctx, changed)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%w: rendering after the change: %w", ErrProofFailed, err)
	}
	return prove(r, before, rendered, want, func() ([]Object, error) { return e.Render(ctx, r) })
}

// prove compares before and after, outputs of r's own values and of the
// changed values, as Prove does; again makes another output of r's own
// values, as before was made, when they differ beyond want. With a nil
// again every difference counts.
func prove(r Release, before, after []Object, want []Expect, again func() ([]Object, error)) error {
	before, after = installed(before), installed(after)
	problems := compareRenders(before, after, want, r.Namespace)
	if len(problems) == 0 {
		return nil
	}
	var leftOut []string
	if again != nil {
		second, err := again()
		if err != nil {
			return fmt.Errorf("rendering the release again with the same values: %w", err)
		}
		second = installed(second)
		unstable := unstableParts(before, second, r.Namespace)
		if len(unstable.order) > 0 || len(unstable.fields) > 0 {
			if err := unstable.holdTarget(r, want, before, second, after); err != nil {
				return err
			}
			before, after = unstable.masked(unstable.without(before)), unstable.masked(unstable.without(after))
			if problems = compareRenders(before, after, want, r.Namespace); len(problems) == 0 {
				return nil
			}
			leftOut = unstable.order
			for _, key := range slices.Sorted(maps.Keys(unstable.fields)) {
				leftOut = append(leftOut, "fields of "+key)
			}
		}
	}
	err := fmt.Errorf("%w: release %s/%s (chart %s %s): %s", ErrProofFailed, r.Namespace, r.Name, r.Chart.Name, r.Chart.Version, boundedJoin(problems, proofLines, "; "))
	if len(leftOut) > 0 {
		err = fmt.Errorf("%w (left out as the chart renders them differently each time: %s)", err, boundedList(leftOut, proofLines))
	}
	return err
}

// hookAnnotation is the annotation that makes an object a Helm hook; its
// value lists the hooks it runs at.
const hookAnnotation = "helm.sh/hook"

// installed leaves out of objects the test hooks, which only helm test
// creates: Flux and Argo CD never apply them with the release, and helm
// create gives them random names.
func installed(objects []Object) []Object {
	out := make([]Object, 0, len(objects))
	for _, o := range objects {
		md, _ := o.Body["metadata"].(map[string]any)
		annotations, _ := md["annotations"].(map[string]any)
		if hook, _ := annotations[hookAnnotation].(string); strings.Contains(hook, "test") {
			continue
		}
		out = append(out, o)
	}
	return out
}

// part is what an object is judged stable or not with: the template that
// renders it, or, for an object a post-renderer made, the object itself.
func part(o Object) string {
	if o.Template != "" {
		return o.Template
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// unstable is what differs between two renders of the same values.
type unstable struct {
	// order lists the parts whose objects differ, in their set or order,
	// as they first appear; differences says, for each, how the second
	// render differs from the first. They are left out.
	order       []string
	differences map[string][]string
	// fields are, by object (indexObjects's key), the paths whose values
	// differ in the parts that render the same objects both times (a
	// checksum of a generated password, a random annotation): they are
	// masked, and the rest of each object compared.
	fields map[string][]Path
}

// variesMask stands, in both outputs, for a value that differs from render
// to render.
const variesMask = "(differs from render to render)"

// unstableParts finds the parts of which two outputs of the same values,
// first and second, differ: in their objects, their order or their
// bodies.
func unstableParts(first, second []Object, namespace string) unstable {
	firstParts, order := byPart(first)
	secondParts, secondOrder := byPart(second)
	for _, p := range secondOrder {
		if _, ok := firstParts[p]; !ok {
			order = append(order, p)
		}
	}
	out := unstable{differences: map[string][]string{}, fields: map[string][]Path{}}
	for _, p := range order {
		a, b := firstParts[p], secondParts[p]
		if len(a) == len(b) && slices.EqualFunc(a, b, sameIdentity) {
			continue // the same objects: their fields are compared below
		}
		out.order = append(out.order, p)
		out.differences[p] = compareRenders(a, b, nil, namespace)
	}
	firstByKey, firstOrder := indexObjects(first)
	secondByKey, _ := indexObjects(second)
	for _, key := range firstOrder {
		a := firstByKey[key]
		if _, left := out.differences[part(a)]; left {
			continue
		}
		if paths := diffPaths(a.Body, secondByKey[key].Body); len(paths) > 0 {
			out.fields[key] = paths
		}
	}
	return out
}

// masked returns objects with the unstable fields of each set to
// variesMask, in copies of their bodies.
func (u unstable) masked(objects []Object) []Object {
	if len(u.fields) == 0 {
		return objects
	}
	_, keys := indexObjects(objects)
	out := slices.Clone(objects)
	for i, key := range keys {
		paths := u.fields[key]
		if len(paths) == 0 {
			continue
		}
		out[i].Body = deepCopyMap(out[i].Body)
		for _, p := range paths {
			setAt(out[i].Body, p, variesMask)
		}
	}
	return out
}

// setAt sets the value at p in body, where p's parent is; else nothing.
func setAt(body any, p Path, v any) {
	if len(p) == 0 {
		return
	}
	for _, step := range p[:len(p)-1] {
		switch node := body.(type) {
		case map[string]any:
			body = node[step.Key]
		case []any:
			if step.Index < 0 || step.Index >= len(node) {
				return
			}
			body = node[step.Index]
		default:
			return
		}
	}
	last := p[len(p)-1]
	switch node := body.(type) {
	case map[string]any:
		if last.Index < 0 {
			node[last.Key] = v
		}
	case []any:
		if last.Index >= 0 && last.Index < len(node) {
			node[last.Index] = v
		}
	}
}

// sameIdentity reports whether a and b are renders of the same object.
func sameIdentity(a, b Object) bool {
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// byPart groups objects by part, keeping their order.
func byPart(objects []Object) (map[string][]Object, []string) {
	out := map[string][]Object{}
	var order []string
	for _, o := range objects {
		p := part(o)
		if _, ok := out[p]; !ok {
			order = append(order, p)
		}
		out[p] = append(out[p], o)
	}
	return out, order
}

// without leaves out of objects those of the unstable parts.
func (u unstable) without(objects []Object) []Object {
	out := make([]Object, 0, len(objects))
	for _, o := range objects {
		if _, ok := u.differences[part(o)]; !ok {
			out = append(out, o)
		}
	}
	return out
}

// holdTarget fails the proof when an unstable part renders a container
// of want, in any of the outputs, or the resources of a target object
// differ from render to render: its change cannot be told apart from what
// the chart changes by itself.
func (u unstable) holdTarget(r Release, want []Expect, outputs ...[]Object) error {
	for _, w := range want {
		target := w.Container
		if target.Namespace == "" {
			target.Namespace = r.Namespace
		}
		if len(outputs) > 0 {
			byKey, order := indexObjects(outputs[0])
			for _, key := range order {
				o := byKey[key]
				if !w.Container.matches(Container{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Container: w.Container.Container}, r.Namespace) {
					continue
				}
				for _, p := range u.fields[key] {
					if slices.ContainsFunc(p, func(s Step) bool { return s.Key == "resources" }) {
						return fmt.Errorf("%w: release %s/%s: chart %s %s renders %s of %s differently each time with the same values, so no change of it can be told apart",
							ErrProofFailed, r.Namespace, r.Name, r.Chart.Name, r.Chart.Version, p, key)
					}
				}
			}
		}
		for _, objects := range outputs {
			for _, o := range objects {
				p := part(o)
				if _, ok := u.differences[p]; !ok || !w.Container.matches(Container{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Container: w.Container.Container}, r.Namespace) ||
					containerOf(o, o.Body, w.Container.Container) == nil {
					continue
				}
				return fmt.Errorf("%w: release %s/%s: chart %s %s renders %s differently each time with the same values, and %s is among what it renders, so no change of it can be told apart: %s",
					ErrProofFailed, r.Namespace, r.Name, r.Chart.Name, r.Chart.Version, p, target, boundedJoin(u.differences[p], proofLines, "; "))
			}
		}
	}
	return nil
}

// compareRenders lists how after differs from before beyond what want
// expects, and where it does not do what want expects; namespace is the
// release's.
func compareRenders(before, after []Object, want []Expect, namespace string) []string {
	var problems []string
	want = slices.Clone(want)
	for i := range want {
		if want[i].Container.Namespace == "" {
			want[i].Container.Namespace = namespace
		}
	}
	beforeByKey, beforeOrder := indexObjects(before)
	afterByKey, afterOrder := indexObjects(after)
	met := make([]bool, len(want))
	for _, key := range beforeOrder {
		b := beforeByKey[key]
		a, ok := afterByKey[key]
		if !ok {
			problems = append(problems, key+" is no longer rendered")
			continue
		}
		bb, ab := deepCopyMap(b.Body), deepCopyMap(a.Body)
		for i, w := range want {
			if !w.Container.matches(Container{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name, Container: w.Container.Container}, namespace) {
				continue
			}
			met[i] = true
			problems = append(problems, expectOn(w, a, ab, bb)...)
		}
		for _, w := range want {
			for t, pct := range w.Utilization {
				if a.Kind == "HorizontalPodAutoscaler" && a.Name == t.HPA && (a.Namespace == "" || a.Namespace == namespace) &&
					!removeUtilization(ab, bb, t.Index, pct) {
					problems = append(problems, fmt.Sprintf("%s: averageUtilization of metric %d is not %d%% after the change", key, t.Index, pct))
				}
			}
		}
		for _, d := range diffValues(bb, ab) {
			problems = append(problems, key+": "+d)
		}
	}
	for _, key := range afterOrder {
		if _, ok := beforeByKey[key]; !ok {
			problems = append(problems, key+" is rendered only after the change")
		}
	}
	for i, w := range want {
		if !met[i] {
			problems = append(problems, w.Container.String()+" is not rendered")
		}
	}
	return problems
}

// indexObjects keys objects by kind, namespace and name; a second object
// of the same key is told apart by its rank.
func indexObjects(objects []Object) (map[string]Object, []string) {
	byKey := map[string]Object{}
	var order []string
	for _, o := range objects {
		key := o.Kind + " " + o.Namespace + "/" + o.Name
		for n := 2; ; n++ {
			if _, dup := byKey[key]; !dup {
				break
			}
			key = o.Kind + " " + o.Namespace + "/" + o.Name + " #" + strconv.Itoa(n)
		}
		byKey[key] = o
		order = append(order, key)
	}
	return byKey, order
}

// expectOn checks w's values on the container of after, the object's
// body after the change, and removes them from both after and before so
// that what remains must be equal.
func expectOn(w Expect, o Object, after, before map[string]any) []string {
	c := containerOf(o, after, w.Container.Container)
	if c == nil {
		return []string{fmt.Sprintf("%s is not rendered after the change", w.Container)}
	}
	var problems []string
	for _, section := range []struct {
		name string
		want corev1.ResourceList
	}{{"requests", w.Requests}, {"limits", w.Limits}} {
		for _, res := range slices.Sorted(maps.Keys(section.want)) {
			field := section.name + "." + string(res)
			want := section.want[res]
			got, ok := resourceValue(c, Field(field))
			switch q, err := quantityOf(got); {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s %s is not set after the change, want %s", w.Container, field, want.String()))
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s %s is %v after the change, not a quantity, want %s", w.Container, field, got, want.String()))
			case q.Cmp(want) != 0:
				problems = append(problems, fmt.Sprintf("%s %s is %s after the change, want %s", w.Container, field, q.String(), want.String()))
			}
			bc := containerOf(o, before, w.Container.Container)
			if bc == nil {
				bc = map[string]any{}
			}
			removeResource(c, bc, section.name, string(res))
		}
	}
	return problems
}

// containerOf returns the named container of a workload's body.
func containerOf(o Object, body map[string]any, name string) map[string]any {
	spec := podSpec(Object{APIVersion: o.APIVersion, Kind: o.Kind, Body: body})
	for _, list := range []string{"initContainers", "containers"} {
		items, _ := spec[list].([]any)
		for _, item := range items {
			if c, ok := item.(map[string]any); ok && c["name"] == name {
				return c
			}
		}
	}
	return nil
}

// removeResource removes one resource value from a container in both
// bodies, and the mappings it leaves empty in both, so that what else
// differs is reported where it differs.
func removeResource(after, before map[string]any, section, res string) {
	containers := []map[string]any{after, before}
	for _, c := range containers {
		if values := resourceMap(c, section); values != nil {
			delete(values, res)
		}
	}
	emptyIn := func(get func(map[string]any) map[string]any) bool {
		for _, c := range containers {
			if len(get(c)) > 0 {
				return false
			}
		}
		return true
	}
	if emptyIn(func(c map[string]any) map[string]any { return resourceMap(c, section) }) {
		for _, c := range containers {
			if resources, _ := c["resources"].(map[string]any); resources != nil {
				delete(resources, section)
			}
		}
	}
	if emptyIn(func(c map[string]any) map[string]any { m, _ := c["resources"].(map[string]any); return m }) {
		for _, c := range containers {
			delete(c, "resources")
		}
	}
}

// resourceMap returns a container's requests or limits mapping.
func resourceMap(c map[string]any, section string) map[string]any {
	resources, _ := c["resources"].(map[string]any)
	values, _ := resources[section].(map[string]any)
	return values
}

// quantityOf reads a rendered resource value: a string, or a number YAML
// parsed.
func quantityOf(v any) (resource.Quantity, error) {
	switch t := v.(type) {
	case string:
		return resource.ParseQuantity(strings.TrimSpace(t))
	case float64:
		return resource.ParseQuantity(strconv.FormatFloat(t, 'f', -1, 64))
	case int64:
		return *resource.NewQuantity(t, resource.DecimalSI), nil
	}
	return resource.Quantity{}, fmt.Errorf("%v is not a quantity", v)
}

// diffPaths lists the paths at which b differs from a.
func diffPaths(a, b any) []Path {
	var out []Path
	walkDiff(a, b, nil, func(at Path, _, _ any, _, _ bool) { out = append(out, at) })
	return out
}

// diffValues lists where b differs from a, as "path: a → b".
func diffValues(a, b any) []string {
	var out []string
	walkDiff(a, b, nil, func(at Path, av, bv any, aok, bok bool) {
		switch {
		case !aok:
			out = append(out, fmt.Sprintf("%s: absent → %s", at, brief(bv)))
		case !bok:
			out = append(out, fmt.Sprintf("%s: %s → absent", at, brief(av)))
		default:
			out = append(out, fmt.Sprintf("%s: %s → %s", at, brief(av), brief(bv)))
		}
	})
	return out
}

// walkDiff calls differ, in key order, at each path below at where b
// differs from a: where a value differs, is in one only (aok or bok
// false), or a list differs in length.
func walkDiff(a, b any, at Path, differ func(at Path, av, bv any, aok, bok bool)) {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		keys := slices.Sorted(maps.Keys(am))
		for _, k := range slices.Sorted(maps.Keys(bm)) {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			av, aok := am[k]
			bv, bok := bm[k]
			if aok && bok {
				walkDiff(av, bv, at.child(Key(k)), differ)
			} else {
				differ(at.child(Key(k)), av, bv, aok, bok)
			}
		}
		return
	}
	al, aIsList := a.([]any)
	bl, bIsList := b.([]any)
	if aIsList && bIsList && len(al) == len(bl) {
		for i := range al {
			walkDiff(al[i], bl[i], at.child(Index(i)), differ)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		differ(at, a, b, true, true)
	}
}

// brief writes a value as compact JSON, cut to a readable length.
func brief(v any) string {
	data, err := json.Marshal(v)
	s := string(data)
	if err != nil {
		s = fmt.Sprint(v)
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	return s
}
