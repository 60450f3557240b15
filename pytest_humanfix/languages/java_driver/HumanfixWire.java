// The calls between the tests and the candidate of a Java task, which run in two JVMs
// (docs/languages.md#execution): one JSON line per message on descriptors 3 (calls in) and 4
// (calls out), every value read and written by the type the declaration gives it, read from
// the generic signature of a method with the declared signature (the candidate's answer
// loop's `shape`, the tests' stub of the entry point).
//
// boolean: true or false. int, long, short, byte: a JSON integer, read exactly at the type's
// size (a value out of its range is refused, never cut). double and float: the shortest
// decimal that reads back the same bits (-0.0 kept), NaN, Infinity and -Infinity as Python's
// json writes them. char: a string of one UTF-16 unit. String: a JSON string, every unit
// outside printable ASCII as a \\u escape (so a lone surrogate crosses). List<T> and T[]: a
// JSON array, rebuilt as an ArrayList or an array.
// Map<K, V>: an array of [key, value] pairs in the map's order, rebuilt as a LinkedHashMap.
// Optional<T>: [] where empty, [value] where present. Object: a one-key object naming the
// class it holds ({"Integer": 4}, {"String": "a"}, {"List": [...]} of Objects, {"Map": [[k,
// v], ...]}, {"Optional": [...]}), for the classes in `tagged`: any other is refused. null,
// where a reference type is declared: JSON null. A message is at most 16 MiB and nests at
// most 100 deep. The tests' side rebuilds each answer as values of its own of the declared
// type: no object of the candidate's reaches a comparison. Each side interns the strings it
// rebuilds, so a literal given or returned is `==` to the same literal on the other side, as
// in one program (Java/137's tests compare strings with ==).
//
// A call is {"args": [...], "kwargs": [], "limit": null}; an answer {"value": v}, {"raise":
// {"type": "<the Throwable's class>", "args": [message]}} for what the candidate's code threw,
// or {"refused": why}. Whatever the other side sends, the reader either gives a value of the
// declared type or throws `HumanfixWire.Refused`.

import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Array;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

public final class HumanfixWire {
    static final int MESSAGE_BYTES = 16 << 20;
    static final int DEPTH = 100;
    static final int CALLS_IN = 3, CALLS_OUT = 4;
    static final int SHOWN_CHARS = 200;

    private HumanfixWire() {}

    /** What cannot cross, or a message that cannot be read. */
    public static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String why) {
            super(why);
        }
    }

    /** A JSON number as its text, read by the declared type that wants it. */
    static final class Numeral {
        final String text;

        Numeral(String text) {
            this.text = text;
        }
    }

    // ---- JSON: text to a tree of null, Boolean, String, Number, List<Object> and
    // LinkedHashMap<String, Object>, and back.

    static final class Reader {
        private final String text;
        private int at;
        private int depth;

        Reader(String text) {
            this.text = text;
        }

        Object document() throws Refused {
            Object value = value();
            blanks();
            if (at != text.length()) fail("more after the message's end");
            return value;
        }

        private void fail(String why) throws Refused {
            throw new Refused(why + " at character " + at + " of the message");
        }

        private void blanks() {
            while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) at++;
        }

        private boolean take(char wanted) {
            blanks();
            if (at < text.length() && text.charAt(at) == wanted) {
                at++;
                return true;
            }
            return false;
        }

        private void expect(char wanted) throws Refused {
            if (!take(wanted)) fail("expected '" + wanted + "'");
        }

        private boolean word(String word) {
            if (text.startsWith(word, at)) {
                at += word.length();
                return true;
            }
            return false;
        }

        private Object value() throws Refused {
            if (++depth > DEPTH) fail("a value nested too deep");
            try {
                blanks();
                if (at >= text.length()) fail("expected a value");
                char c = text.charAt(at);
                if (c == '"') return string();
                if (c == '[') {
                    at++;
                    List<Object> items = new ArrayList<>();
                    if (take(']')) return items;
                    do {
                        items.add(value());
                    } while (take(','));
                    expect(']');
                    return items;
                }
                if (c == '{') {
                    at++;
                    Map<String, Object> fields = new LinkedHashMap<>();
                    if (take('}')) return fields;
                    do {
                        blanks();
                        if (at >= text.length() || text.charAt(at) != '"') fail("expected a key");
                        String key = string();
                        expect(':');
                        if (fields.put(key, value()) != null) fail("a key given twice");
                    } while (take(','));
                    expect('}');
                    return fields;
                }
                if (word("true")) return Boolean.TRUE;
                if (word("false")) return Boolean.FALSE;
                if (word("null")) return null;
                for (String special : new String[] {"NaN", "Infinity", "-Infinity"}) {
                    if (word(special)) return new Numeral(special);
                }
                return number();
            } finally {
                depth--;
            }
        }

        private int digits() {
            int start = at;
            while (at < text.length() && text.charAt(at) >= '0' && text.charAt(at) <= '9') at++;
            return at - start;
        }

        private Numeral number() throws Refused {
            int start = at;
            if (at < text.length() && text.charAt(at) == '-') at++;
            int whole = digits();
            if (whole == 0 || (whole > 1 && text.charAt(at - whole) == '0')) fail("expected a value");
            if (at < text.length() && text.charAt(at) == '.') {
                at++;
                if (digits() == 0) fail("expected digits after '.'");
            }
            if (at < text.length() && (text.charAt(at) == 'e' || text.charAt(at) == 'E')) {
                at++;
                if (at < text.length() && (text.charAt(at) == '+' || text.charAt(at) == '-')) at++;
                if (digits() == 0) fail("expected an exponent");
            }
            return new Numeral(text.substring(start, at));
        }

        private String string() throws Refused {
            at++;  // the opening quote
            StringBuilder units = new StringBuilder();
            while (true) {
                if (at >= text.length()) fail("a string without its end");
                char c = text.charAt(at++);
                if (c == '"') return units.toString();
                if (c < 0x20) fail("a control character in a string");
                if (c != '\\') {
                    units.append(c);
                    continue;
                }
                if (at >= text.length()) fail("a string without its end");
                char escaped = text.charAt(at++);
                int simple = "\"\\/bfnrt".indexOf(escaped);
                if (simple >= 0) {
                    units.append("\"\\/\b\f\n\r\t".charAt(simple));
                    continue;
                }
                if (escaped != 'u' || at + 4 > text.length()) fail("an unknown escape in a string");
                int code = 0;
                for (int i = 0; i < 4; i++) {
                    int digit = Character.digit(text.charAt(at++), 16);
                    if (digit < 0) fail("a bad unicode escape");
                    code = code * 16 + digit;
                }
                units.append((char) code);
            }
        }
    }

    static void writeString(StringBuilder out, String units) {
        out.append('"');
        for (int i = 0; i < units.length(); i++) {
            char c = units.charAt(i);
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c >= 0x20 && c < 0x7f) out.append(c);
            else out.append(String.format("\\u%04x", (int) c));
        }
        out.append('"');
    }

    static void write(StringBuilder out, Object tree) {
        if (tree == null) out.append("null");
        else if (tree instanceof Boolean) out.append(tree);
        else if (tree instanceof Numeral) out.append(((Numeral) tree).text);
        else if (tree instanceof String) writeString(out, (String) tree);
        else if (tree instanceof List) {
            out.append('[');
            boolean first = true;
            for (Object item : (List<?>) tree) {
                if (!first) out.append(',');
                first = false;
                write(out, item);
            }
            out.append(']');
        } else {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> field : ((Map<?, ?>) tree).entrySet()) {
                if (!first) out.append(',');
                first = false;
                writeString(out, (String) field.getKey());
                out.append(':');
                write(out, field.getValue());
            }
            out.append('}');
        }
    }

    static String text(Object tree) {
        StringBuilder out = new StringBuilder();
        write(out, tree);
        return out.toString();
    }

    static Map<String, Object> object(String key, Object value) {
        Map<String, Object> one = new LinkedHashMap<>();
        one.put(key, value);
        return one;
    }

    // ---- Values of the declared types to trees (`plain`) and back (`rebuilt`).

    static Class<?> raw(Type type) throws Refused {
        if (type instanceof Class) return (Class<?>) type;
        if (type instanceof ParameterizedType) return (Class<?>) ((ParameterizedType) type).getRawType();
        if (type instanceof GenericArrayType) {
            return Array.newInstance(raw(((GenericArrayType) type).getGenericComponentType()), 0)
                        .getClass();
        }
        throw new Refused("the declared type " + type + " has no codec");
    }

    static Type argument(Type type, int index) {
        return type instanceof ParameterizedType
               ? ((ParameterizedType) type).getActualTypeArguments()[index] : Object.class;
    }

    static Type component(Type type) throws Refused {
        if (type instanceof GenericArrayType) return ((GenericArrayType) type).getGenericComponentType();
        return raw(type).getComponentType();
    }

    static String floating(double value) {
        if (Double.isNaN(value)) return "NaN";
        if (Double.isInfinite(value)) return value > 0 ? "Infinity" : "-Infinity";
        return Double.toString(value);
    }

    static String floating(float value) {
        if (Float.isNaN(value)) return "NaN";
        if (Float.isInfinite(value)) return value > 0 ? "Infinity" : "-Infinity";
        return Float.toString(value);
    }

    static Refused notPlain(Object value, Type type) {
        return new Refused("a value of " + value.getClass().getName() + " where " + type.getTypeName()
                           + " is declared, which cannot cross");
    }

    /** A value of the declared `type` as a tree; what is not of that type is refused. */
    static Object plain(Object value, Type type, int depth) throws Refused {
        if (depth > DEPTH) throw new Refused("a value nested too deep");
        Class<?> kind = raw(type);
        if (value == null) {
            if (kind.isPrimitive()) throw new Refused("null where " + kind + " is declared");
            return null;
        }
        if (kind == Object.class) return tagged(value, depth);
        Class<?> boxed = boxed(kind);
        if (boxed == Boolean.class && value instanceof Boolean) return value;
        if ((boxed == Integer.class || boxed == Long.class || boxed == Short.class || boxed == Byte.class)
            && value.getClass() == boxed) {
            return new Numeral(value.toString());
        }
        if (boxed == Double.class && value instanceof Double) return new Numeral(floating((Double) value));
        if (boxed == Float.class && value instanceof Float) return new Numeral(floating((Float) value));
        if (boxed == Character.class && value instanceof Character) return value.toString();
        if (boxed == String.class && value instanceof String) return value;
        if (boxed == Optional.class && value instanceof Optional) {
            List<Object> held = new ArrayList<>();
            Optional<?> optional = (Optional<?>) value;
            if (optional.isPresent()) held.add(plain(optional.get(), argument(type, 0), depth + 1));
            return held;
        }
        if ((boxed == List.class || boxed == Collection.class) && value instanceof Collection) {
            List<Object> items = new ArrayList<>();
            for (Object item : (Collection<?>) value) items.add(plain(item, argument(type, 0), depth + 1));
            return items;
        }
        if (kind.isArray() && value.getClass().isArray()) {
            List<Object> items = new ArrayList<>();
            for (int i = 0; i < Array.getLength(value); i++) {
                items.add(plain(Array.get(value, i), component(type), depth + 1));
            }
            return items;
        }
        if (boxed == Map.class && value instanceof Map) {
            List<Object> pairs = new ArrayList<>();
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                List<Object> pair = new ArrayList<>();
                pair.add(plain(entry.getKey(), argument(type, 0), depth + 1));
                pair.add(plain(entry.getValue(), argument(type, 1), depth + 1));
                pairs.add(pair);
            }
            return pairs;
        }
        throw notPlain(value, type);
    }

    // The classes an Object may hold to cross, each under its name; the tests' casts and
    // instanceof then find the class the candidate's value had (a List as an ArrayList, a Map
    // as a LinkedHashMap).
    static final String[] TAGS = {"Integer", "Long", "Short", "Byte", "Double", "Float", "Boolean",
                                  "Character", "String", "List", "Map", "Optional"};
    static final Class<?>[] TAGGED = {Integer.class, Long.class, Short.class, Byte.class, Double.class,
                                      Float.class, Boolean.class, Character.class, String.class,
                                      List.class, Map.class, Optional.class};

    static Object tagged(Object value, int depth) throws Refused {
        for (int i = 0; i < TAGS.length; i++) {
            if (TAGGED[i].isInterface() ? TAGGED[i].isInstance(value) : value.getClass() == TAGGED[i]) {
                Type held = TAGGED[i];
                if (TAGGED[i] == List.class || TAGGED[i] == Optional.class) {
                    held = parameterized(TAGGED[i], Object.class);
                } else if (TAGGED[i] == Map.class) {
                    held = parameterized(Map.class, Object.class, Object.class);
                }
                return object(TAGS[i], plain(value, held, depth + 1));
            }
        }
        throw new Refused("an Object of " + value.getClass().getName() + ", which cannot cross (it may "
                          + "hold Integer, Long, Short, Byte, Double, Float, Boolean, Character, "
                          + "String, a List, a Map or an Optional of these)");
    }

    static ParameterizedType parameterized(Class<?> raw, Type... arguments) {
        return new ParameterizedType() {
            public Type[] getActualTypeArguments() {
                return arguments.clone();
            }

            public Type getRawType() {
                return raw;
            }

            public Type getOwnerType() {
                return null;
            }

            public String getTypeName() {
                return raw.getName();
            }
        };
    }

    static Class<?> boxed(Class<?> kind) {
        if (!kind.isPrimitive()) return kind;
        if (kind == int.class) return Integer.class;
        if (kind == long.class) return Long.class;
        if (kind == double.class) return Double.class;
        if (kind == boolean.class) return Boolean.class;
        if (kind == char.class) return Character.class;
        if (kind == float.class) return Float.class;
        if (kind == short.class) return Short.class;
        if (kind == byte.class) return Byte.class;
        return kind;
    }

    static String numberText(Object tree, String what) throws Refused {
        if (!(tree instanceof Numeral)) throw new Refused(what + " expected");
        return ((Numeral) tree).text;
    }

    static long integer(Object tree, long least, long most, String what) throws Refused {
        String text = numberText(tree, what);
        long read;
        try {
            read = Long.parseLong(text);
        } catch (NumberFormatException error) {
            throw new Refused(what + " expected, and " + text + " is none (or out of its range)");
        }
        if (read < least || read > most) throw new Refused(text + " is out of the range of " + what);
        return read;
    }

    static double floatingRead(Object tree, String what) throws Refused {
        return Double.parseDouble(numberText(tree, what));  // NaN, Infinity, -Infinity included
    }

    static List<?> array(Object tree, String what) throws Refused {
        if (!(tree instanceof List)) throw new Refused(what + " expected as an array");
        return (List<?>) tree;
    }

    /** A tree as a new value of the declared `type`, its strings interned. */
    static Object rebuilt(Object tree, Type type) throws Refused {
        Class<?> kind = raw(type);
        if (tree == null) {
            if (kind.isPrimitive()) throw new Refused("null where " + kind + " is declared");
            return null;
        }
        Class<?> boxed = boxed(kind);
        if (boxed == Object.class) return untagged(tree);
        if (boxed == Boolean.class) {
            if (!(tree instanceof Boolean)) throw new Refused("a boolean expected");
            return tree;
        }
        if (boxed == Integer.class) {
            return (int) integer(tree, Integer.MIN_VALUE, Integer.MAX_VALUE, "an int");
        }
        if (boxed == Long.class) return integer(tree, Long.MIN_VALUE, Long.MAX_VALUE, "a long");
        if (boxed == Short.class) return (short) integer(tree, Short.MIN_VALUE, Short.MAX_VALUE, "a short");
        if (boxed == Byte.class) return (byte) integer(tree, Byte.MIN_VALUE, Byte.MAX_VALUE, "a byte");
        if (boxed == Double.class) return floatingRead(tree, "a double");
        if (boxed == Float.class) return Float.parseFloat(numberText(tree, "a float"));
        if (boxed == Character.class) {
            if (!(tree instanceof String) || ((String) tree).length() != 1) {
                throw new Refused("a char expected as a string of one unit");
            }
            return ((String) tree).charAt(0);
        }
        if (boxed == String.class) {
            if (!(tree instanceof String)) throw new Refused("a string expected");
            return ((String) tree).intern();
        }
        if (boxed == Optional.class) {
            List<?> held = array(tree, "an Optional");
            if (held.size() > 1) throw new Refused("an Optional of more than one value");
            return held.isEmpty() ? Optional.empty()
                                  : Optional.ofNullable(rebuilt(held.get(0), argument(type, 0)));
        }
        if (boxed == List.class || boxed == Collection.class) {
            List<Object> items = new ArrayList<>();
            for (Object item : array(tree, "a List")) items.add(rebuilt(item, argument(type, 0)));
            return items;
        }
        if (kind.isArray()) {
            List<?> items = array(tree, "an array");
            Object made = Array.newInstance(raw(component(type)), items.size());
            for (int i = 0; i < items.size(); i++) {
                Array.set(made, i, rebuilt(items.get(i), component(type)));
            }
            return made;
        }
        if (boxed == Map.class) {
            Map<Object, Object> made = new LinkedHashMap<>();
            for (Object pair : array(tree, "a Map")) {
                List<?> both = array(pair, "a [key, value] pair");
                if (both.size() != 2) throw new Refused("a [key, value] pair of " + both.size() + " items");
                made.put(rebuilt(both.get(0), argument(type, 0)),
                         rebuilt(both.get(1), argument(type, 1)));
            }
            return made;
        }
        throw new Refused("the declared type " + type.getTypeName() + " has no codec");
    }

    static Object untagged(Object tree) throws Refused {
        if (!(tree instanceof Map) || ((Map<?, ?>) tree).size() != 1) {
            throw new Refused("an Object expected as a one-key object naming its class");
        }
        Map.Entry<?, ?> only = ((Map<?, ?>) tree).entrySet().iterator().next();
        for (int i = 0; i < TAGS.length; i++) {
            if (TAGS[i].equals(only.getKey())) {
                Type held = TAGGED[i];
                if (TAGGED[i] == List.class || TAGGED[i] == Optional.class) {
                    held = parameterized(TAGGED[i], Object.class);
                } else if (TAGGED[i] == Map.class) {
                    held = parameterized(Map.class, Object.class, Object.class);
                }
                Object value = rebuilt(only.getValue(), held);
                if (value == null) throw new Refused("an Object of " + TAGS[i] + " that is null");
                return value;
            }
        }
        throw new Refused("an Object of an unknown class");
    }

    // ---- The pipes.

    static FileDescriptor descriptor(int number) {
        try {
            FileDescriptor made = new FileDescriptor();
            java.lang.reflect.Field fd = FileDescriptor.class.getDeclaredField("fd");
            fd.setAccessible(true);  // the JVM is started with --add-opens java.base/java.io
            fd.setInt(made, number);
            return made;
        } catch (ReflectiveOperationException | RuntimeException error) {
            System.err.println("error: descriptor " + number + ", a pipe of the calls, cannot be "
                               + "opened: " + error);
            Runtime.getRuntime().halt(2);
            return null;
        }
    }

    /** A line of at most MESSAGE_BYTES, without its newline; null at the end of the pipe. */
    static String readLine(InputStream in) throws IOException, Refused {
        java.io.ByteArrayOutputStream line = new java.io.ByteArrayOutputStream();
        while (true) {
            int b = in.read();
            if (b == '\n') break;
            if (b < 0) {
                if (line.size() == 0) return null;
                throw new Refused("a message cut off before its end");
            }
            if (line.size() >= MESSAGE_BYTES) throw new Refused("a message longer than 16 MiB");
            line.write(b);
        }
        return new String(line.toByteArray(), StandardCharsets.UTF_8);
    }

    static void writeLine(OutputStream out, String line) throws IOException {
        out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    static Method named(Class<?> owner, String name) {
        for (Method method : owner.getDeclaredMethods()) {
            if (method.getName().equals(name)) return method;
        }
        throw new IllegalStateException(owner + " has no method " + name);
    }

    static String raised(Throwable thrown) {
        List<Object> args = new ArrayList<>();
        String message = String.valueOf(thrown.getMessage());
        args.add(message.length() > 2000 ? message.substring(0, 2000) : message);
        Map<String, Object> raise = new LinkedHashMap<>();
        raise.put("type", thrown.getClass().getName());
        raise.put("args", args);
        return text(object("raise", raise));
    }

    /** The candidate's main: each call read from CALLS_IN answered on CALLS_OUT by the static
     * method `name` of `owner` (its signature the declared one), until the end of the pipe. */
    public static void answerCalls(Class<?> owner, String name) throws IOException {
        Method shape = named(owner, name);
        shape.setAccessible(true);
        Type[] params = shape.getGenericParameterTypes();
        InputStream calls = new java.io.BufferedInputStream(new FileInputStream(descriptor(CALLS_IN)));
        OutputStream answers = new FileOutputStream(descriptor(CALLS_OUT));
        String line;
        while (true) {
            String reply;
            try {
                line = readLine(calls);
                if (line == null) return;
                Object call = new Reader(line).document();
                Object given = call instanceof Map ? ((Map<?, ?>) call).get("args") : null;
                List<?> args = array(given, "a call's arguments");
                if (args.size() != params.length) {
                    throw new Refused("a call of " + args.size() + " arguments, where "
                                      + params.length + " are declared");
                }
                Object[] values = new Object[params.length];
                for (int i = 0; i < params.length; i++) values[i] = rebuilt(args.get(i), params[i]);
                Object result;
                try {
                    result = shape.invoke(null, values);
                } catch (InvocationTargetException thrown) {
                    reply = raised(thrown.getCause());
                    writeLine(answers, reply);
                    continue;
                }
                reply = text(object("value", plain(result, shape.getGenericReturnType(), 0)));
            } catch (Refused refused) {
                reply = text(object("refused", refused.getMessage()));
            } catch (Throwable error) {  // of the candidate's values, their iterators say
                reply = raised(error);
            }
            if (reply.length() >= MESSAGE_BYTES / 6) {
                byte[] bytes = reply.getBytes(StandardCharsets.UTF_8);
                if (bytes.length >= MESSAGE_BYTES) reply = text(object("refused", "an answer longer than 16 MiB"));
            }
            writeLine(answers, reply);
        }
    }

    private static InputStream testsIn;
    private static OutputStream testsOut;

    /** The tests' side of a call fails the tests with a line naming the call: the JVM halts
     * with status 1, so no check after it runs and no hook of anyone's runs. */
    static void failed(String name, String args, String why) {
        String shown = args.length() > SHOWN_CHARS ? args.substring(0, SHOWN_CHARS) + "..." : args;
        System.out.flush();
        System.err.println("error: the call " + name + "(" + shown + ") " + why);
        System.err.flush();
        Runtime.getRuntime().halt(1);
    }

    static String cut(Object text, int chars) {
        String shown = String.valueOf(text);
        return shown.length() > chars ? shown.substring(0, chars) + "..." : shown;
    }

    /** The tests' stub: the call of `owner`'s method `name` (the declared signature) with
     * `args` sent on CALLS_OUT, and the answer read from CALLS_IN rebuilt as a value of the
     * declared return type. */
    public static Object call(Class<?> owner, String name, Object... args) {
        Method stub = named(owner, name);
        Type[] params = stub.getGenericParameterTypes();
        String shown = "";
        try {
            List<Object> trees = new ArrayList<>();
            for (int i = 0; i < params.length; i++) trees.add(plain(args[i], params[i], 0));
            String listed = text(trees);
            shown = listed.substring(1, listed.length() - 1);
            if (testsOut == null) {
                testsOut = new FileOutputStream(descriptor(CALLS_OUT));
                testsIn = new java.io.BufferedInputStream(new FileInputStream(descriptor(CALLS_IN)));
            }
            String line;
            try {
                writeLine(testsOut, "{\"args\":" + listed + ",\"kwargs\":[],\"limit\":null}");
                line = readLine(testsIn);
            } catch (IOException error) {
                line = null;
            }
            if (line == null) failed(name, shown, "got no answer: the candidate's process ended");
            Object answer = new Reader(line).document();
            if (!(answer instanceof Map) || ((Map<?, ?>) answer).size() != 1) {
                throw new Refused("an answer that is neither a value, an exception nor a refusal");
            }
            Map<?, ?> fields = (Map<?, ?>) answer;
            if (fields.containsKey("value")) return rebuilt(fields.get("value"), stub.getGenericReturnType());
            if (fields.get("raise") instanceof Map) {
                Map<?, ?> raise = (Map<?, ?>) fields.get("raise");
                Object what = raise.get("args") instanceof List && !((List<?>) raise.get("args")).isEmpty()
                              ? ((List<?>) raise.get("args")).get(0) : "";
                failed(name, shown, "threw " + cut(raise.get("type"), SHOWN_CHARS) + ": "
                       + cut(what, SHOWN_CHARS * 5));
            }
            if (fields.get("refused") instanceof String) {
                failed(name, shown, "has an answer that cannot cross: " + cut(fields.get("refused"), SHOWN_CHARS * 5));
            }
            throw new Refused("an answer that is neither a value, an exception nor a refusal");
        } catch (Refused refused) {
            failed(name, shown, "has an answer that cannot be read: " + refused.getMessage());
        }
        return null;
    }
}
