// Chapter 2's exercise (a = 2, b = 3, c = a * b, L = c + a), written out as valuegraph's JSON.
using System;
using System.Collections.Generic;

public static class Program
{
    public static void Main()
    {
        var a = new Value(2.0);
        var b = new Value(3.0);
        Value c = a * b;
        Value loss = c + a;
        loss.Backward();
        var names = new Dictionary<Value, string> { { a, "a" }, { b, "b" }, { c, "c" }, { loss, "L" } };
        Console.WriteLine(loss.ToGraphJson(names));
    }
}
