// A Value in the shape of the course's C# chapters 1 and 2, written for valuegraph's tests
// (C# 7, so that Debian's mono compiles it): each operation stores its inputs and their local
// gradients; Backward() sorts with an explicit (node, next input) stack and adds with +=.
using System;
using System.Collections.Generic;

public class Value
{
    public double Data;
    public double Grad;
    private readonly Value[] _inputs;
    private readonly double[] _localGrads;

    public Value(double data, Value[] inputs = null, double[] localGrads = null)
    {
        Data = data;
        _inputs = inputs;
        _localGrads = localGrads;
    }

    public static Value operator +(Value a, Value b) => new Value(a.Data + b.Data, new[] { a, b }, new[] { 1.0, 1.0 });
    public static Value operator *(Value a, Value b) => new Value(a.Data * b.Data, new[] { a, b }, new[] { b.Data, a.Data });
    public Value Pow(double n) => new Value(Math.Pow(Data, n), new[] { this }, new[] { n * Math.Pow(Data, n - 1) });
    public Value Log() => new Value(Math.Log(Data), new[] { this }, new[] { 1.0 / Data });
    public Value Exp() => new Value(Math.Exp(Data), new[] { this }, new[] { Math.Exp(Data) });
    public Value Relu() => new Value(Math.Max(0, Data), new[] { this }, new[] { Data > 0 ? 1.0 : 0.0 });

    public void Backward()
    {
        var sorted = new List<Value>();
        var seen = new HashSet<Value> { this };
        var pending = new Stack<KeyValuePair<Value, int>>();
        pending.Push(new KeyValuePair<Value, int>(this, 0));
        while (pending.Count > 0)
        {
            var top = pending.Pop();
            Value[] inputs = top.Key._inputs;
            if (inputs != null && top.Value < inputs.Length)
            {
                pending.Push(new KeyValuePair<Value, int>(top.Key, top.Value + 1));
                if (seen.Add(inputs[top.Value])) pending.Push(new KeyValuePair<Value, int>(inputs[top.Value], 0));
            }
            else
            {
                sorted.Add(top.Key);
            }
        }
        Grad = 1.0;
        for (int i = sorted.Count - 1; i >= 0; i--)
        {
            Value v = sorted[i];
            if (v._inputs == null) continue;
            for (int j = 0; j < v._inputs.Length; j++)
                v._inputs[j].Grad += v._localGrads[j] * v.Grad;
        }
    }

    // valuegraph: the snippet goes here
}
