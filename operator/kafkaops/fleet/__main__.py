"""`python -m kafkaops.fleet plan ...`, and the script spark-submit runs:

    spark-submit --master yarn --deploy-mode client \
        "$(python -c 'import kafkaops.fleet.__main__ as m; print(m.__file__)')" \
        plan --desired hdfs:///gitops/repo --observed hdfs:///gitops/snapshots --output-dir hdfs:///gitops/fleet/$(date +%F)

Under spark-submit the session takes spark-submit's master and settings (see session.py).
"""

from kafkaops.cli.fleet import fleet

if __name__ == "__main__":
    fleet(prog_name="kafkaops fleet")
