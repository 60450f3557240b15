// The harness's javac for its own code (the wire, the tests' programs), one JVM per worker,
// outside any sandbox (languages/java.py): a javac started per tests' program costs a JVM's
// start and a cold compiler each time, and a control compiles each task's tests once. It reads
// one request a line, javac's arguments separated by tabs, and answers one line: javac's exit
// status, a tab, and what javac said with each newline written as \n and each backslash as
// \\. It ends at the end of its input (the worker's end).

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

public final class HumanfixCompiler {
    private HumanfixCompiler() {}

    public static void main(String[] args) throws IOException {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        BufferedReader requests = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream answers = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        String line;
        while ((line = requests.readLine()) != null) {
            ByteArrayOutputStream said = new ByteArrayOutputStream();
            int status = javac.run(null, said, said, line.split("\t"));
            String text = said.toString(StandardCharsets.UTF_8);
            answers.println(status + "\t" + text.replace("\\", "\\\\").replace("\n", "\\n"));
        }
    }
}
