import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import org.apache.jmeter.save.SaveService;
import org.apache.jmeter.util.JMeterUtils;
import org.apache.jorphan.collections.HashTree;

/** Loads a JMeter test plan and saves it as JMeter 5 saves it: RESAVE HOME IN OUT. */
public class Resave {
    public static void main(String[] args) throws Exception {
        String home = args[0];
        JMeterUtils.setJMeterHome(home);
        JMeterUtils.loadJMeterProperties(home + "/bin/jmeter.properties");
        JMeterUtils.initLocale();
        SaveService.loadProperties();
        HashTree tree = SaveService.loadTree(new File(args[1]));
        try (OutputStream out = new FileOutputStream(args[2])) {
            SaveService.saveTree(tree, out);
        }
    }
}
