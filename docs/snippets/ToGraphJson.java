    // valuegraph: the graph this Value was made from, as the JSON that POST /backward takes
    // as {"graph": ...}. names: labels for the values you want to see by name (the rest get
    // numbers). Add it inside your Value class; it reads data, grad, children and localGrads.
    public String toGraphJson(java.util.Map<Value, String> names) {
        java.util.Map<Value, Integer> ids = new java.util.IdentityHashMap<>();
        java.util.Set<Value> visited = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        java.util.Deque<Value> nodeStack = new java.util.ArrayDeque<>();
        java.util.Deque<Integer> nextStack = new java.util.ArrayDeque<>();
        java.util.List<String> nodes = new java.util.ArrayList<>();
        visited.add(this);
        nodeStack.push(this);
        nextStack.push(0);
        while (!nodeStack.isEmpty()) {
            Value node = nodeStack.pop();
            int next = nextStack.pop();
            if (next < node.children.length) {
                nodeStack.push(node);
                nextStack.push(next + 1);
                if (visited.add(node.children[next])) {
                    nodeStack.push(node.children[next]);
                    nextStack.push(0);
                }
                continue;
            }
            ids.put(node, ids.size()); // every input already has its id: children come before parents
            StringBuilder children = new StringBuilder(), localGrads = new StringBuilder();
            for (int j = 0; j < node.children.length; j++) {
                children.append(j > 0 ? "," : "").append(ids.get(node.children[j]));
                localGrads.append(j > 0 ? "," : "").append(jsonNumber(node.localGrads[j]));
            }
            String label = names.get(node);
            nodes.add("{\"id\":" + ids.get(node) + ",\"label\":" + (label == null ? "null" : jsonString(label))
                + ",\"data\":" + jsonNumber(node.data) + ",\"grad\":" + jsonNumber(node.grad)
                + ",\"children\":[" + children + "],\"local_grads\":[" + localGrads + "]}");
        }
        return "{\"nodes\":[" + String.join(",", nodes) + "],\"output\":" + ids.get(this) + ",\"language\":\"java\"}";
    }

    // JSON has no NaN or Infinity: valuegraph reads them as the strings "NaN", "Infinity", "-Infinity".
    static String jsonNumber(double x) {
        if (Double.isNaN(x)) return "\"NaN\"";
        if (Double.isInfinite(x)) return x > 0 ? "\"Infinity\"" : "\"-Infinity\"";
        return Double.toString(x);
    }

    static String jsonString(String text) {
        StringBuilder json = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') json.append('\\').append(c);
            else if (c < ' ') json.append(String.format("\\u%04x", (int) c));
            else json.append(c);
        }
        return json.append('"').toString();
    }
