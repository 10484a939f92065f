    // valuegraph: the graph this Value was made from, as the JSON that POST /backward takes
    // as {"graph": ...}. names: labels for the values you want to see by name (the rest get
    // numbers). Add it inside your Value class; it reads Data, Grad, _inputs and _localGrads.
    public string ToGraphJson(Dictionary<Value, string> names = null)
    {
        var ids = new Dictionary<Value, int>();
        var nodes = new List<string>();
        var visited = new HashSet<Value> { this };
        var stack = new Stack<KeyValuePair<Value, int>>();
        stack.Push(new KeyValuePair<Value, int>(this, 0));
        while (stack.Count > 0)
        {
            var top = stack.Pop();
            Value node = top.Key;
            int next = top.Value;
            Value[] inputs = node._inputs ?? new Value[0];
            if (next < inputs.Length)
            {
                stack.Push(new KeyValuePair<Value, int>(node, next + 1));
                if (visited.Add(inputs[next])) stack.Push(new KeyValuePair<Value, int>(inputs[next], 0));
                continue;
            }
            ids[node] = ids.Count; // every input already has its id: children come before parents
            var children = new List<string>();
            var localGrads = new List<string>();
            for (int j = 0; j < inputs.Length; j++)
            {
                children.Add(ids[inputs[j]].ToString());
                localGrads.Add(JsonNumber(node._localGrads[j]));
            }
            string label;
            nodes.Add("{\"id\":" + ids[node]
                + ",\"label\":" + (names != null && names.TryGetValue(node, out label) ? JsonString(label) : "null")
                + ",\"data\":" + JsonNumber(node.Data) + ",\"grad\":" + JsonNumber(node.Grad)
                + ",\"children\":[" + string.Join(",", children) + "]"
                + ",\"local_grads\":[" + string.Join(",", localGrads) + "]}");
        }
        return "{\"nodes\":[" + string.Join(",", nodes) + "],\"output\":" + ids[this] + ",\"language\":\"csharp\"}";
    }

    // JSON has no NaN or Infinity: valuegraph reads them as the strings "NaN", "Infinity", "-Infinity".
    static string JsonNumber(double x) =>
        double.IsNaN(x) ? "\"NaN\""
        : double.IsInfinity(x) ? (x > 0 ? "\"Infinity\"" : "\"-Infinity\"")
        : x.ToString("R", System.Globalization.CultureInfo.InvariantCulture);

    static string JsonString(string text)
    {
        var json = new System.Text.StringBuilder("\"");
        foreach (char c in text)
            json.Append(c == '"' || c == '\\' ? "\\" + c : c < ' ' ? "\\u" + ((int)c).ToString("x4") : c.ToString());
        return json.Append('"').ToString();
    }
