"""GPUs end to end: the daemon loads a fake libnvidia-ml.so.1 through the
real dlopen path and reports exact per-device and per-job values in samples,
the job summary, the CSV and `resource-trackerctl status`."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import Daemon, run_ctl, wait_for  # noqa: E402

MIB = 1024 * 1024


class GpuDaemon(unittest.TestCase):
    def setUp(self):
        fake = os.environ.get("RT_FAKE_NVML_DIR")
        if not fake or not os.path.exists(os.path.join(fake, "libnvidia-ml.so.1")):
            self.fail("RT_FAKE_NVML_DIR does not hold the fake libnvidia-ml.so.1")
        # The job: a shell with two children; one child "uses" both GPUs.
        self.root = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True)
        kids = wait_for(lambda: self.children(self.root.pid), what="the job's children")
        self.user = kids[0]
        self.other = subprocess.Popen(["sleep", "60"])  # a stranger on GPU 0
        self.solo = subprocess.Popen(["sleep", "60"])   # alone on GPU 1, which counts no energy
        self.tmp_cfg = os.path.join("/tmp", "rt-fake-nvml-%d.conf" % os.getpid())
        with open(self.tmp_cfg, "w") as f:
            f.write("driver=535.104.05\n"
                    "device\nname=NVIDIA H100 80GB HBM3\nuuid=GPU-aaaa\npci=00000000:17:00.0\n"
                    "util=40\nmem_total=%d\nmem_used=%d\ntemp=51\npower_mw=312500\nclock=1980\n"
                    "energy_mj=1000000\nenergy_step_mj=1000\n"
                    "process\npid=%d\nvram=%d\nsm=30\nlist=both\n"
                    "process\npid=%d\nvram=%d\nsm=10\nlist=compute\n"
                    "device\nname=NVIDIA H100 80GB HBM3\nuuid=GPU-bbbb\npci=00000000:2a:00.0\n"
                    "util=0\nmem_total=%d\nmem_used=%d\ntemp=33\nret.power=3\nret.energy=3\nclock=345\n"
                    "process\npid=%d\nvram=%d\nsm=0\nlist=graphics\n"
                    "process\npid=%d\nvram=0\nsm=5\nlist=compute\n"
                    % (80 * 1024 * MIB, 3 * 1024 * MIB, self.user, 2048 * MIB, self.other.pid, 1024 * MIB,
                       80 * 1024 * MIB, 512 * MIB, self.user, 512 * MIB, self.solo.pid))
        self.d = Daemon(interval=0.25, env={"LD_LIBRARY_PATH": fake, "FAKE_NVML_CONFIG": self.tmp_cfg}).start()

    def tearDown(self):
        os.killpg(self.root.pid, 9)  # the shell and its sleeps
        self.other.kill()
        self.solo.kill()
        for p in (self.root, self.other, self.solo):
            p.wait()
        try:
            self.d.stop()
        finally:
            self.d.cleanup()
            os.unlink(self.tmp_cfg)

    @staticmethod
    def children(pid):
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def test_host_and_job_gpu(self):
        s = wait_for(lambda: (lambda s: len(s["gpu"]) == 2 and s)(self.d.call("GetHostSample")["sample"]),
                     what="both GPUs in a host sample")
        g0, g1 = s["gpu"]
        self.assertEqual((g0["uuid"], g0["name"], g0["host_id"], g0["vendor"]),
                         ("GPU-aaaa", "NVIDIA H100 80GB HBM3", "0", "nvidia"))
        self.assertEqual((g0["utilization_pct"], g0["vram_used_bytes"], g0["vram_total_bytes"]),
                         (40.0, 3 * 1024 * MIB, 80 * 1024 * MIB))
        self.assertEqual((g0["temperature_celsius"], g0["power_watts"], g0["frequency_mhz"]), (51, 312.5, 1980))
        self.assertEqual(g0["detail"]["driver_version"], "535.104.05")
        self.assertIsNone(g1["power_watts"], "NOT_SUPPORTED power degrades to null")
        self.assertEqual(g1["temperature_celsius"], 33)
        # Host-wide process GPU values: all processes on all GPUs.
        self.assertEqual(s["cpu"]["process_gpu_vram_mib"], 2048 + 1024 + 512)
        self.assertEqual(s["cpu"]["process_gpu_utilized"], 2)

        job = self.d.call("StartJob", {"pid": self.root.pid, "name": "gpu-job"})["job"]
        wait_for(lambda: self.d.call("GetJob", {"id": job["id"]})["job"]["summary"]["samples"] >= 3)
        samples = self.d.call("GetJobSamples", {"id": job["id"]})["samples"]
        last = samples[-1]["cpu"]
        # Only the job's process counts: 2048 + 512 MiB on two GPUs, SM 30 % once
        # (listed as compute and graphics on GPU 0, not counted twice).
        self.assertEqual(last["process_gpu_vram_mib"], 2560.0)
        self.assertEqual(last["process_gpu_utilized"], 2)
        self.assertAlmostEqual(last["process_gpu_usage"], 0.30, places=4)
        csv = self.d.call("GetJobSamples", {"id": job["id"], "format": "csv"})["csv"].splitlines()
        row = csv[-1].split(",")
        self.assertEqual(row[18:21], ["0.4000", "3584.0000", "1"])  # system GPU columns
        self.assertEqual(row[29:32], ["0.3000", "2560.0000", "2"])  # process GPU columns
        self.d.call("StopJob", {"id": job["id"]})
        summ = self.d.call("GetJob", {"id": job["id"]})["job"]["summary"]
        self.assertEqual(summ["gpu_peak_vram_bytes"], 2560 * MIB)
        self.assertAlmostEqual(summ["gpu_avg_usage"], 0.30, places=3)
        self.assertEqual(sorted(summ["gpus"]), ["GPU-aaaa", "GPU-bbbb"])
        self.assertIsNotNone(summ["gpu_energy_joules"])
        self.assertGreater(summ["gpu_energy_joules"], 0)

        _, out, _ = run_ctl(self.d, "status", check=0)
        self.assertIn("GPU      0          NVIDIA H100 80GB HBM3: 40% busy", out)
        _, out, _ = run_ctl(self.d, "status", "gpu-job", check=0)
        self.assertRegex(out, r"GPU +0\.30 GPUs on average, peak VRAM 2\.50 GiB, energy \d+\.\d J\n")

    def test_job_on_a_gpu_without_energy(self):
        wait_for(lambda: len(self.d.call("GetHostSample")["sample"]["gpu"]) == 2, what="both GPUs")
        job = self.d.call("StartJob", {"pid": self.solo.pid, "name": "no-energy"})["job"]
        wait_for(lambda: self.d.call("GetJob", {"id": job["id"]})["job"]["summary"]["samples"] >= 3)
        self.d.call("StopJob", {"id": job["id"]})
        summ = self.d.call("GetJob", {"id": job["id"]})["job"]["summary"]
        self.assertAlmostEqual(summ["gpu_avg_usage"], 0.05, places=3)
        self.assertIsNone(summ["gpu_energy_joules"])
        _, out, _ = run_ctl(self.d, "status", "no-energy", check=0)
        self.assertRegex(out, r"GPU +0\.05 GPUs on average, peak VRAM [^,]+, energy unknown\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
