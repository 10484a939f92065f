// A Value in the shape of the course's chapters (data, grad, children, local gradients), in Java,
// written for valuegraph's tests; backward() sorts with a visited set and adds with +=.
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

public class Value {
    double data;
    double grad;
    final Value[] children;
    final double[] localGrads;

    Value(double data, Value[] children, double[] localGrads) {
        this.data = data;
        this.children = children;
        this.localGrads = localGrads;
    }

    Value(double data) {
        this(data, new Value[0], new double[0]);
    }

    Value add(Value other) {
        return new Value(data + other.data, new Value[] {this, other}, new double[] {1, 1});
    }

    Value mul(Value other) {
        return new Value(data * other.data, new Value[] {this, other}, new double[] {other.data, data});
    }

    void backward() {
        List<Value> sorted = new ArrayList<>();
        Set<Value> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        visit(this, seen, sorted);
        grad = 1;
        for (int i = sorted.size() - 1; i >= 0; i--) {
            Value v = sorted.get(i);
            for (int j = 0; j < v.children.length; j++) {
                v.children[j].grad += v.localGrads[j] * v.grad;
            }
        }
    }

    private static void visit(Value v, Set<Value> seen, List<Value> sorted) {
        if (!seen.add(v)) return;
        for (Value child : v.children) visit(child, seen, sorted);
        sorted.add(v);
    }

    public static void main(String[] args) {
        Value a = new Value(2), b = new Value(3);
        Value c = a.mul(b);
        Value loss = c.add(a);
        loss.backward();
        java.util.Map<Value, String> names = new IdentityHashMap<>();
        names.put(a, "a");
        names.put(b, "b");
        names.put(c, "c");
        names.put(loss, "L");
        System.out.println(loss.toGraphJson(names));
    }

    // valuegraph: the snippet goes here
}
